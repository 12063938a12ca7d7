import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ExitCode, UsageError } from '../../../src/lib/errors.js';
import { readKubeconfig, resolveKubeAccess } from '../../../src/lib/orphans/kube/config.js';

const dir = mkdtempSync(join(tmpdir(), 'storctl-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const b64 = (s: string) => Buffer.from(s).toString('base64');
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('kubeconfig (real files)', () => {
  it('reads the current context: server, inline CA and client certificate', async () => {
    const p = file(
      'inline.yaml',
      `apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: dev
  context: {cluster: dev, user: dev}
- name: prod
  context:
    cluster: prod
    user: admin
clusters:
- name: dev
  cluster: {server: 'https://dev:6443'}
- name: prod
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: ${b64('CA PEM')}
users:
- name: admin
  user:
    client-certificate-data: ${b64('CERT PEM')}
    client-key-data: ${b64('KEY PEM')}
`,
    );
    expect(await readKubeconfig(p)).toEqual({
      server: 'https://10.0.0.1:6443',
      source: `${p} (context prod)`,
      ca: 'CA PEM',
      cert: 'CERT PEM',
      key: 'KEY PEM',
      token: undefined,
      insecureSkipTlsVerify: false,
    });
  });

  it('reads files relative to the kubeconfig, as kubectl does, and a token file', async () => {
    mkdirSync(join(dir, 'certs'), { recursive: true });
    file('certs/ca.crt', 'CA FROM FILE');
    file('certs/token', 'tok-123\n');
    const p = file(
      'files.yaml',
      `current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: 'https://k:6443', certificate-authority: certs/ca.crt}}]
users: [{name: u, user: {tokenFile: certs/token}}]
`,
    );
    const access = await readKubeconfig(p);
    expect(access.ca).toBe('CA FROM FILE');
    expect(access.token).toBe('tok-123');
  });

  it('refuses exec credentials, a missing context and an unreadable file as usage errors', async () => {
    const exec = file(
      'exec.yaml',
      `current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: 'https://k'}}]
users: [{name: u, user: {exec: {command: aws}}}]
`,
    );
    const missing = file('missing.yaml', `current-context: nope\ncontexts: []\n`);
    for (const [p, msg] of [
      [exec, /exec\/auth-provider/],
      [missing, /no context 'nope'/],
      [join(dir, 'absent.yaml'), /cannot be read/],
    ] as const) {
      const err = await readKubeconfig(p).catch((e) => e);
      expect(err).toBeInstanceOf(UsageError);
      expect(err.exitCode).toBe(ExitCode.usage);
      expect(err.message).toMatch(msg);
    }
  });

  it('falls back to the in-cluster service account, and to nothing without one', async () => {
    const sa = join(dir, 'sa');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'sa-token\n');
    writeFileSync(join(sa, 'ca.crt'), 'SA CA');
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
    expect(await resolveKubeAccess(undefined, env, sa)).toMatchObject({
      server: 'https://10.96.0.1:443',
      token: 'sa-token',
      ca: 'SA CA',
    });
    expect(await resolveKubeAccess(undefined, {}, sa)).toBeNull();
    expect(await resolveKubeAccess(undefined, env, join(dir, 'no-sa'))).toBeNull();
  });
});
