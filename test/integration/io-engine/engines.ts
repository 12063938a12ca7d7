import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';

export const CLUSTER_ID = 'io-engine-test';

export interface RunningEngine {
  node: string;
  proc: StorctlProcess;
  client: IoEngineClient;
  grpcEndpoint: string;
  nbdEndpoint: string;
  poolDir: string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Start `storctl daemon io-engine` (the built CLI) on free loopback ports and wait for its ready
 * line. `nbdPort` pins the NBD port (for restarts that must keep child URIs valid).
 */
export async function startEngine(
  dir: string,
  node: string,
  opts: { nbdPort?: number; heartbeatTtl?: number; storeUrl?: string; extraArgs?: string[] } = {},
): Promise<RunningEngine> {
  const poolDir = join(dir, node, 'pools');
  await mkdir(poolDir, { recursive: true });
  const args = [
    'daemon',
    'io-engine',
    '--node',
    node,
    '--pool-dir',
    poolDir,
    '--grpc',
    '127.0.0.1:0',
    '--nbd',
    `127.0.0.1:${opts.nbdPort ?? 0}`,
    '--store',
    opts.storeUrl ?? `sqlite:${join(dir, 'store.db')}`,
    '--cluster-id',
    CLUSTER_ID,
    '--heartbeat-ttl',
    String(opts.heartbeatTtl ?? 10),
    '--log-level',
    'info',
    ...(opts.extraArgs ?? []),
  ];
  const proc = new StorctlProcess(args);
  const ready = await waitFor(
    async () => {
      const line = proc.output.split('\n').find((l) => l.includes('"io-engine ready"'));
      if (line) return JSON.parse(line) as { grpcEndpoint: string; nbdEndpoint: string };
      await proc.failIfExited(`io-engine ${node}`);
      return null;
    },
    { what: `io-engine ${node} ready`, timeoutMs: 30_000 },
  );
  const client = new IoEngineClient(ready.grpcEndpoint);
  return {
    node,
    proc,
    client,
    grpcEndpoint: ready.grpcEndpoint,
    nbdEndpoint: ready.nbdEndpoint,
    poolDir,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      client.close();
      await proc.kill(signal);
    },
  };
}
