import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import type { TestCluster } from '../core/cluster.js';

/** The fast HA timings the tests run with (the issue's: path checks every 250 ms). */
export const FAST_HA_NODE_FLAGS = [
  '--interval',
  '250ms',
  '--probe-timeout',
  '1s',
  '--fail-after',
  '2',
  '--retransmit-period',
  '500ms',
];

/** Wait for a daemon's `<what> listening on HOST:PORT` line and return HOST:PORT. */
export async function listeningOn(proc: StorctlProcess, what: string): Promise<string> {
  const re = new RegExp(`${what} listening on (\\S+)`);
  return waitFor(
    async () => {
      const m = re.exec(proc.output);
      return m ? m[1] : (await proc.failIfExited(what)) || null;
    },
    { what: `${what} to listen`, timeoutMs: 30_000 },
  );
}

/** `storctl daemon ha-cluster` against the cluster's core and store, on a free port. */
export async function startHaCluster(
  cluster: TestCluster,
  extra: string[] = [],
): Promise<{ proc: StorctlProcess; endpoint: string }> {
  const proc = new StorctlProcess(
    [
      'daemon',
      'ha-cluster',
      '--rest',
      cluster.restUrl,
      '--grpc',
      '127.0.0.1:0',
      '--retry-delay',
      '200ms',
      '--lease-ttl',
      '2',
      ...extra,
    ],
    cluster.env,
  );
  const endpoint = await listeningOn(proc, 'ha-cluster');
  await waitFor(
    async () => proc.output.includes('"ha-cluster active"') || (await proc.failIfExited('ha-cluster')),
    {
      what: 'ha-cluster to be elected',
      timeoutMs: 30_000,
    },
  );
  return { proc, endpoint };
}

/** `storctl daemon ha-node` for the csi-node fixture's node. */
export async function startHaNode(
  cluster: TestCluster,
  o: { node: string; clusters: string[]; csiNode: string },
): Promise<{ proc: StorctlProcess; endpoint: string }> {
  const proc = new StorctlProcess(
    [
      'daemon',
      'ha-node',
      '--node',
      o.node,
      '--cluster',
      o.clusters.join(','),
      '--csi-node',
      o.csiNode,
      '--grpc',
      '127.0.0.1:0',
      ...FAST_HA_NODE_FLAGS,
    ],
    cluster.env,
  );
  return { proc, endpoint: await listeningOn(proc, 'ha-node') };
}
