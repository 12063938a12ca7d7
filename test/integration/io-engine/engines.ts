import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { IoEngineClient, IoEngineError, type Replica } from '../../../src/lib/io-engine/client.js';
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

/** Three io-engines, a pool on each, and a nexus on `a` over one local and two remote replicas. */
export interface ThreeChildNexus {
  a: RunningEngine; // nexus host, one local child
  b: RunningEngine; // remote child r1
  c: RunningEngine; // remote child r2
  local: Replica;
  r1: Replica;
  r2: Replica;
  nexusUuid: string;
  infoKey: string;
  /** The published target's URI. */
  target: string;
}

/** Start the usual fault-test layout in `dir`: node-a..c with pools pa..pc, a published 3-child nexus. */
export async function startThreeChildNexus(
  dir: string,
  size: number,
  volumeId: string,
): Promise<ThreeChildNexus> {
  const [a, b, c] = await Promise.all([
    startEngine(dir, 'node-a'),
    startEngine(dir, 'node-b'),
    startEngine(dir, 'node-c'),
  ]);
  const MiB = 1024 * 1024;
  await a.client.createPool({ name: 'pa', capacity: 256 * MiB });
  await b.client.createPool({ name: 'pb', capacity: 256 * MiB });
  await c.client.createPool({ name: 'pc', capacity: 256 * MiB });
  const local = await a.client.createReplica({ uuid: randomUUID(), pool: 'pa', size, thin: true });
  const remote = (e: RunningEngine, pool: string) =>
    e.client.createReplica({ uuid: randomUUID(), pool, size, thin: true, share: 'nbd' });
  const r1 = await remote(b, 'pb');
  const r2 = await remote(c, 'pc');
  const nexusUuid = randomUUID();
  const n = await a.client.createNexus({
    uuid: nexusUuid,
    size,
    children: [local.uri, r1.uri, r2.uri],
    volumeId,
  });
  const target = (await a.client.publishNexus(nexusUuid)).deviceUri;
  return { a, b, c, local, r1, r2, nexusUuid, infoKey: n.nexusInfoKey, target };
}

/** A replica's file in its engine's pool directory. */
export const replicaFile = (e: RunningEngine, pool: string, r: Replica) =>
  join(e.poolDir, pool, 'replicas', `${r.uuid}.img`);

/** `CODE: message` of the gRPC error a call to an io-engine fails with (fails when it succeeds). */
export async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof IoEngineError) return `${err.codeName}: ${err.message}`;
    throw err;
  }
  throw new Error('expected the call to fail');
}
