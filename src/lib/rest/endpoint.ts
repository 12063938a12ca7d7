import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import { defaultClusterId } from '../cluster-id.js';
import { ExitCode, StorctlError } from '../errors.js';
import { defaultDataDir, defaultStoreUrl } from '../paths.js';

/** Mayastor's api-rest HTTP port; the REST URL when nothing else says where core is. */
export const DEFAULT_REST_URL = 'http://127.0.0.1:8081';

/**
 * Response header naming the key space core serves (`<cluster-id>/<namespace>`): `get` joins core's
 * live state only from a core of the cluster it reads (a STORCTL_REST left pointing elsewhere would
 * otherwise mix two clusters).
 */
export const CLUSTER_HEADER = 'x-storctl-cluster';

export const clusterHeaderValue = (space: { clusterId: string; namespace: string }) =>
  `${space.clusterId}/${space.namespace}`;

/** What `storctl up` publishes for flagless operator commands: `<data-dir>/endpoints.json`. */
export interface ClusterEndpoints {
  /** Core's REST URL; absent when `up --roles` runs no core. */
  rest?: string;
  store: string;
  /** The key space `up` serves (absent in files of older versions). */
  clusterId?: string;
  namespace?: string;
  pid?: number;
  ioEngines?: { node: string; grpc: string; nbd: string }[];
  [role: string]: unknown;
}

export function endpointsFile(dataDir = defaultDataDir()): string {
  return join(dataDir, 'endpoints.json');
}

export function readEndpoints(dataDir = defaultDataDir()): ClusterEndpoints | null {
  const file = endpointsFile(dataDir);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // There, but not for this user: going on with the defaults would send the command to another
    // place (or none) and blame that ("start a cluster with storctl up") for a cluster that runs.
    if (code === 'EACCES' || code === 'EPERM')
      throw new StorctlError(
        'ENDPOINTS_UNREADABLE',
        `cannot read ${file} (${code}): it says where the cluster that \`storctl up\` runs in ${dataDir} serves`,
        ExitCode.failure,
        {
          suggestions: [
            'run the command as the user that started `storctl up`',
            'or name the cluster yourself: --rest URL and --store URL (or STORCTL_REST, STORCTL_STORE)',
          ],
        },
      );
    return null;
  }
  try {
    const v = JSON.parse(text);
    return v && typeof v.store === 'string' && (v.rest === undefined || typeof v.rest === 'string')
      ? (v as ClusterEndpoints)
      : null;
  } catch {
    return null;
  }
}

/** Written atomically (temp file + rename), readable by the user only. */
export async function writeEndpoints(dataDir: string, endpoints: ClusterEndpoints): Promise<void> {
  await writeFileAtomic(endpointsFile(dataDir), `${JSON.stringify(endpoints, null, 2)}\n`);
}

/**
 * The store and cluster id a command uses: the given ones (flags, environment), else those of the
 * cluster `storctl up` runs with the data dir (its endpoints.json; its cluster id only with its
 * store), else the data dir's embedded store and this machine's id. So `STORCTL_DATA_DIR` alone
 * finds an `up` cluster on etcd or under another cluster id, as it finds its REST URL.
 */
export function commandCluster(
  given: { store?: string; clusterId?: string },
  dataDir = defaultDataDir(),
): { storeUrl: string; clusterId: string } {
  const up = given.store !== undefined && given.clusterId !== undefined ? null : readEndpoints(dataDir);
  const storeUrl = given.store ?? up?.store ?? defaultStoreUrl(dataDir);
  const upsClusterId = up && storeUrl === up.store ? up.clusterId : undefined;
  return { storeUrl, clusterId: given.clusterId ?? upsClusterId ?? defaultClusterId() };
}

/** REST URL of core: `--rest` / STORCTL_REST first (the caller passes it), then `up`'s file, then the default. */
export function resolveRestUrl(flag: string | undefined, dataDir = defaultDataDir()): string {
  if (flag) return flag.replace(/\/+$/, '');
  return readEndpoints(dataDir)?.rest ?? DEFAULT_REST_URL;
}
