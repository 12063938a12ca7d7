import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';
import { makeTestPki, type TestPki } from '../../helpers/tls.js';
import { RecordedKubeApiFixture } from './kube-fixture.js';

/**
 * The Kubernetes API over TLS as a kubeconfig describes it: the CA from a file (relative to the
 * kubeconfig), a client certificate inline and its key from a file. Against the recorded fixture
 * served over HTTPS with client-certificate authentication; the store is empty, so what is checked
 * is that the lists were read (or the failure named), not what they contain.
 */
describe('storctl orphans --kubeconfig over TLS (recorded API fixture)', () => {
  let dir: string;
  let pki: TestPki;
  let kube: RecordedKubeApiFixture;
  const env = () => ({ STORCTL_STORE: `sqlite:${join(dir, 'store.db')}`, STORCTL_CLUSTER_ID: 'tls-test' });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-orphans-tls-'));
    await (await openStore(env().STORCTL_STORE)).close(); // the cluster's (empty) store
    pki = makeTestPki(dir);
    kube = new RecordedKubeApiFixture('unused-token', pki);
    await kube.start();
  });
  afterAll(async () => {
    await kube?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const kubeconfig = (user: string, withCa = true) => {
    const file = join(dir, `kubeconfig-${kube.requests.length}-${Math.random().toString(36).slice(2)}`);
    writeFileSync(
      file,
      `apiVersion: v1
kind: Config
current-context: tls
contexts:
- name: tls
  context: {cluster: tls, user: u}
clusters:
- name: tls
  cluster:
    server: ${kube.url}
${withCa ? `    certificate-authority: ${join('.', 'ca.pem')}\n` : ''}users:
- name: u
  user:
${user}
`,
    );
    return file;
  };

  it('verifies the server against the CA and authenticates with the client certificate', async () => {
    const file = kubeconfig(
      `    client-certificate-data: ${readFileSync(pki.clientCert).toString('base64')}\n    client-key: ${pki.clientKey}`,
    );
    const before = kube.requests.length;
    const r = await runStorctl(['orphans', '--kubeconfig', file, '-o', 'json'], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([]);
    expect(r.stderr).not.toContain('no Kubernetes API configured');
    const paths = kube.requests.slice(before).map((p) => p.split('?')[0]);
    expect(paths.sort()).toEqual(['/api/v1/persistentvolumeclaims', '/api/v1/persistentvolumes']);
  });

  it('without a client certificate (nor a token) the API answers 401 and orphans fails naming it', async () => {
    const r = await runStorctl(['orphans', '--kubeconfig', kubeconfig('    {}'), '-o', 'json'], {
      env: env(),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('answered 401');
  });

  it('a server the kubeconfig gives no CA for is not trusted: unreachable (exit 6), nothing listed', async () => {
    const file = kubeconfig(
      `    client-certificate-data: ${readFileSync(pki.clientCert).toString('base64')}\n    client-key: ${pki.clientKey}`,
      false,
    );
    const r = await runStorctl(['orphans', '--kubeconfig', file, '-o', 'json'], { env: env() });
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(
      /Kubernetes API at https:\/\/127\.0\.0\.1:\d+ is unreachable: \S*(CERT|SIGNED|VERIFY)/,
    );
    expect(r.stdout).toBe('');
  });
});
