import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse } from 'yaml';
import { UsageError } from '../../errors.js';

/** How to reach a Kubernetes API server: its URL and the TLS material and token to present. */
export interface KubeAccess {
  server: string;
  /** Where this came from, for messages: the kubeconfig file and context, or "in-cluster". */
  source: string;
  ca?: string;
  cert?: string;
  key?: string;
  token?: string;
  insecureSkipTlsVerify?: boolean;
}

/** The service account files every pod gets. */
export const IN_CLUSTER_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The API server to read PVs and PVCs from: `--kubeconfig FILE` when given, else the in-cluster
 * service account (KUBERNETES_SERVICE_HOST and the token file), else null (no Kubernetes here).
 */
export async function resolveKubeAccess(
  kubeconfig: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  inClusterDir = IN_CLUSTER_DIR,
): Promise<KubeAccess | null> {
  if (kubeconfig) return readKubeconfig(kubeconfig);
  const host = env.KUBERNETES_SERVICE_HOST;
  const tokenFile = `${inClusterDir}/token`;
  if (!host || !existsSync(tokenFile)) return null;
  const port = env.KUBERNETES_SERVICE_PORT || '443';
  const caFile = `${inClusterDir}/ca.crt`;
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    source: `in-cluster service account (${inClusterDir})`,
    token: (await readFile(tokenFile, 'utf8')).trim(),
    ca: existsSync(caFile) ? await readFile(caFile, 'utf8') : undefined,
  };
}

type Named<T> = { name: string } & T;
interface Kubeconfig {
  'current-context'?: string;
  contexts?: Named<{ context: { cluster: string; user?: string } }>[];
  clusters?: Named<{
    cluster: {
      server: string;
      'certificate-authority'?: string;
      'certificate-authority-data'?: string;
      'insecure-skip-tls-verify'?: boolean;
    };
  }>[];
  users?: Named<{
    user?: {
      token?: string;
      tokenFile?: string;
      'client-certificate'?: string;
      'client-certificate-data'?: string;
      'client-key'?: string;
      'client-key-data'?: string;
      exec?: unknown;
      'auth-provider'?: unknown;
    };
  }>[];
}

/**
 * Read a kubeconfig's current context: server, CA, client certificate or token (files or inline
 * base64 data; relative file paths are relative to the kubeconfig, as kubectl reads them). Exec and
 * auth-provider credentials are not run: a usage error says so.
 */
export async function readKubeconfig(file: string): Promise<KubeAccess> {
  let doc: Kubeconfig;
  try {
    doc = parse(await readFile(file, 'utf8')) as Kubeconfig;
  } catch (err) {
    throw new UsageError(`--kubeconfig ${file} cannot be read: ${(err as Error).message}`);
  }
  const bad = (what: string): never => {
    throw new UsageError(`--kubeconfig ${file}: ${what}`);
  };
  if (!doc || typeof doc !== 'object') bad('not a kubeconfig');
  const ctxName = doc['current-context'] ?? doc.contexts?.[0]?.name ?? bad('no current-context');
  const ctx = doc.contexts?.find((c) => c.name === ctxName)?.context ?? bad(`no context '${ctxName}'`);
  const cluster =
    doc.clusters?.find((c) => c.name === ctx.cluster)?.cluster ?? bad(`no cluster '${ctx.cluster}'`);
  if (!cluster.server) bad(`cluster '${ctx.cluster}' has no server`);
  const user = ctx.user ? (doc.users?.find((u) => u.name === ctx.user)?.user ?? {}) : {};
  if (user.exec || user['auth-provider'])
    bad(
      `user '${ctx.user}' authenticates through exec/auth-provider, which storctl does not run; use a token or client certificate`,
    );
  const base = dirname(resolve(file));
  const fromFile = (p: string) => readFile(isAbsolute(p) ? p : resolve(base, p), 'utf8');
  const fromData = (d: string) => Buffer.from(d, 'base64').toString('utf8');
  const pick = async (data?: string, path?: string) =>
    data ? fromData(data) : path ? await fromFile(path) : undefined;
  return {
    server: cluster.server.replace(/\/+$/, ''),
    source: `${file} (context ${ctxName})`,
    ca: await pick(cluster['certificate-authority-data'], cluster['certificate-authority']),
    cert: await pick(user['client-certificate-data'], user['client-certificate']),
    key: await pick(user['client-key-data'], user['client-key']),
    token: user.token ?? (user.tokenFile ? (await fromFile(user.tokenFile)).trim() : undefined),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  };
}
