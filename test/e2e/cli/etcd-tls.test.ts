import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { runStorctl } from '../../helpers/storctl.js';
import { makeTestPki, type TestPki } from '../../helpers/tls.js';
import { fixtureDump, ids, space } from './cluster-fixture.js';

/**
 * The README's `--etcd-ca/--etcd-cert/--etcd-key` flags and their STORCTL_ETCD_* fallbacks, through
 * the built CLI against an etcd that serves TLS only and demands client certificates.
 */
describe('storctl against an etcd serving TLS with client certificates', () => {
  let dir: string;
  let pki: TestPki;
  /** A second CA that signed neither the server nor the client certificate. */
  let otherPki: TestPki;
  let etcd: EtcdServer;
  let dump: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-cli-tls-'));
    pki = makeTestPki(dir);
    mkdirSync(join(dir, 'other'));
    otherPki = makeTestPki(join(dir, 'other'));
    etcd = await startEtcd({ tls: { ca: pki.ca, cert: pki.serverCert, key: pki.serverKey } });
    dump = join(dir, 'fixture.jsonl');
    writeFileSync(dump, fixtureDump());
  });
  afterAll(async () => {
    await etcd?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const keySpace = ['--cluster-id', space.clusterId, '--namespace', space.namespace];

  /** What the store holds, read with the library over TLS (not through the CLI under test). */
  async function storedVolume(id: string): Promise<string | undefined> {
    const store = await openStore(etcd.url, {
      tls: { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey },
    });
    try {
      return (await store.get(objectKey(space, 'VolumeSpec', id)))?.value;
    } finally {
      await store.close();
    }
  }

  it('--etcd-ca/--etcd-cert/--etcd-key: store load writes over TLS and get reads it back', async () => {
    const tlsFlags = ['--etcd-ca', pki.ca, '--etcd-cert', pki.clientCert, '--etcd-key', pki.clientKey];
    const load = await runStorctl(['store', 'load', dump, '--store', etcd.url, ...keySpace, ...tlsFlags]);
    expect(load.stderr).toBe('');
    expect(load.code).toBe(0);
    expect(await storedVolume(ids.vol2)).toContain(`"uuid":"${ids.vol2}"`);

    const get = await runStorctl([
      'get',
      'volumes',
      '-o',
      'json',
      '--store',
      etcd.url,
      ...keySpace,
      ...tlsFlags,
    ]);
    expect(get.stderr).toBe('');
    expect(get.code).toBe(0);
    const uuids = (JSON.parse(get.stdout) as { spec: { uuid: string } }[]).map((v) => v.spec.uuid).sort();
    expect(uuids).toEqual([ids.vol1, ids.vol2].sort());
  });

  it('STORCTL_ETCD_CA/CERT/KEY: the environment alone selects TLS, even on a plain etcd:// URL', async () => {
    const env = {
      STORCTL_STORE: etcd.url.replace(/^etcd\+https:/, 'etcd:'),
      STORCTL_CLUSTER_ID: space.clusterId,
      STORCTL_ETCD_CA: pki.ca,
      STORCTL_ETCD_CERT: pki.clientCert,
      STORCTL_ETCD_KEY: pki.clientKey,
    };
    expect(env.STORCTL_STORE).toMatch(/^etcd:\/\/127\.0\.0\.1:\d+$/);
    const get = await runStorctl(['get', 'volume', ids.vol1, '-o', 'json'], { env });
    expect(get.stderr).toBe('');
    expect(get.code).toBe(0);
    expect(JSON.parse(get.stdout).spec.uuid).toBe(ids.vol1);
    // Without the environment the same URL is plain HTTP/2 to a TLS port: the store is unreachable.
    const plain = await runStorctl(['get', 'volume', ids.vol1], {
      env: { STORCTL_STORE: env.STORCTL_STORE, STORCTL_CLUSTER_ID: space.clusterId },
    });
    expect(plain.code).toBe(5);
  });

  it('a CA that did not sign the server certificate: exit 5 (store unreachable), naming the endpoint', async () => {
    const r = await runStorctl([
      'get',
      'volumes',
      '--store',
      etcd.url,
      ...keySpace,
      '--etcd-ca',
      otherPki.ca,
      '--etcd-cert',
      pki.clientCert,
      '--etcd-key',
      pki.clientKey,
    ]);
    expect(r.stdout).toBe('');
    expect(r.code).toBe(5);
    const where = etcd.url.replace(/^etcd\+https:\/\//, '');
    expect(r.stderr).toContain(`Error: store etcd+https://${where} is unreachable`);
    // Node's verdict on the chain, then what to check.
    expect(r.stderr).toMatch(/unable to verify the first certificate/);
    expect(r.stderr).toContain('Try: for TLS use etcd+https:// (or --etcd-ca/--etcd-cert/--etcd-key)');
  });

  it('a client certificate from another CA: exit 5, the server refuses the handshake', async () => {
    const r = await runStorctl([
      'get',
      'volumes',
      '--store',
      etcd.url,
      ...keySpace,
      '--etcd-ca',
      pki.ca,
      '--etcd-cert',
      otherPki.clientCert,
      '--etcd-key',
      otherPki.clientKey,
    ]);
    expect(r.stdout).toBe('');
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('is unreachable');
    expect(r.stderr).toMatch(/bad certificate/);
  });
});
