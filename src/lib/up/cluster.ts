import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ConflictError } from '../errors.js';
import { resolveFuseAdapter } from '../mount/fuse-binary.js';
import { RestClient } from '../rest/client.js';
import { endpointsFile, readEndpoints, writeEndpoints } from '../rest/endpoint.js';
import { RoleProcess } from './supervisor.js';

export interface UpOptions {
  dataDir: string;
  storeUrl: string;
  clusterId: string;
  namespace: string;
  /** `storctl` entry point the children run (bin/run.js). */
  bin: string;
  restAddress: string;
  nodes: number;
  poolCapacity: number;
  logLevel: string;
  /** S3 endpoint of the mounter (cluster-wide setting); none = the FUSE binary's default (AWS). */
  s3Endpoint?: string;
  /** Progress lines for the operator. */
  say: (line: string) => void;
}

export interface UpCluster {
  rest: string;
  /** CSI socket of the S3 mounter, or null when no S3 FUSE binary is installed. */
  mounterSocket: string | null;
  roles: RoleProcess[];
  /** Resolves with the first role that exits on its own. */
  firstExit: Promise<RoleProcess>;
  stop(): Promise<void>;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * `storctl up`: three io-engines and core on one store, each its own `storctl daemon <role>`
 * process as on separate machines; one pool per node; endpoints published for flagless commands.
 */
export async function up(o: UpOptions): Promise<UpCluster> {
  mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
  const existing = readEndpoints(o.dataDir);
  if (existing?.pid && existing.pid !== process.pid && pidAlive(existing.pid)) {
    throw new ConflictError(
      'CLUSTER_RUNNING',
      `a cluster started by \`storctl up\` (pid ${existing.pid}) already runs in ${o.dataDir} (REST ${existing.rest})`,
      {
        suggestions: ['stop it with Ctrl-C (or kill that pid), or pass another --data-dir'],
      },
    );
  }
  const logs = join(o.dataDir, 'logs');
  mkdirSync(logs, { recursive: true, mode: 0o700 });
  // S3 keys in the operator's environment are for the mounter alone (startMounter adds them back).
  const env: NodeJS.ProcessEnv = {
    ...withoutAwsKeys(process.env),
    STORCTL_STORE: o.storeUrl,
    STORCTL_CLUSTER_ID: o.clusterId,
    STORCTL_NAMESPACE: o.namespace,
    STORCTL_LOG_LEVEL: o.logLevel,
  };
  const roles: RoleProcess[] = [];
  const stop = async () => {
    // Core first (it stops writing), then the io-engines.
    for (const r of [...roles].reverse()) await r.stop();
    const file = endpointsFile(o.dataDir);
    if (existsSync(file) && JSON.parse(readFileSync(file, 'utf8')).pid === process.pid)
      rmSync(file, { force: true });
  };
  try {
    const engines = [];
    for (let i = 1; i <= o.nodes; i++) {
      const node = `node-${i}`;
      const dir = join(o.dataDir, 'nodes', node);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const r = new RoleProcess(
        `io-engine ${node}`,
        o.bin,
        [
          'daemon',
          'io-engine',
          '--node',
          node,
          '--pool-dir',
          dir,
          '--grpc',
          '127.0.0.1:0',
          '--nbd',
          '127.0.0.1:0',
        ],
        env,
        join(logs, `io-engine-${node}.log`),
        'io-engine ready',
      );
      roles.push(r);
      engines.push({ node, dir, r });
    }
    const ready = await Promise.all(engines.map((e) => e.r.ready));
    const core = new RoleProcess(
      'core',
      o.bin,
      [
        'daemon',
        'core',
        '--rest',
        o.restAddress,
        '--cache-period',
        '5s',
        '--reconcile-period',
        '2s',
        '--reconcile-idle-period',
        '10s',
      ],
      env,
      join(logs, 'core.log'),
      'core ready',
    );
    roles.push(core);
    const rest = String((await core.ready).url);
    const client = new RestClient(rest);
    try {
      const pools = await client.listPools();
      for (const e of engines) {
        const id = `pool-${e.node}`;
        if (pools.some((p) => p.id === id)) continue;
        await client.createPool(e.node, id, { disks: [join(e.dir, id)], capacity: o.poolCapacity });
        o.say(`created pool ${id} on ${e.node}`);
      }
    } finally {
      await client.close();
    }
    const ioEngines = engines.map((e, i) => ({
      node: e.node,
      grpc: String(ready[i].grpcEndpoint),
      nbd: String(ready[i].nbdEndpoint),
    }));
    const mounterSocket = await startMounter(o, env, logs, roles);
    await writeEndpoints(o.dataDir, { rest, store: o.storeUrl, pid: process.pid, ioEngines, mounterSocket });
    const firstExit = Promise.race(roles.map((r) => r.wait().then(() => r)));
    return { rest, mounterSocket, roles, firstExit, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The S3 CSI node plugin. `--mounter auto` runs FUSE daemons as systemd units when a systemd manager
 * answers on the system bus, else as supervised processes. Without an S3 FUSE binary there is
 * nothing it could mount: the cluster starts without it and says how to add it.
 */
async function startMounter(o: UpOptions, env: NodeJS.ProcessEnv, logs: string, roles: RoleProcess[]) {
  try {
    await resolveFuseAdapter(undefined, env);
  } catch (err) {
    o.say(`mounter not started: ${(err as Error).message}`);
    return null;
  }
  const stateDir = join(o.dataDir, 'mounter');
  const socket = join(stateDir, 'csi.sock');
  const args = ['daemon', 'mounter', '--endpoint', `unix://${socket}`, '--node-id', 'node-1'];
  args.push('--mounter', 'auto', '--state-dir', stateDir);
  if (o.s3Endpoint) args.push('--s3-endpoint', o.s3Endpoint);
  const mounterEnv = { ...env, ...awsKeys(process.env) };
  const mounter = new RoleProcess(
    'mounter',
    o.bin,
    args,
    mounterEnv,
    join(logs, 'mounter.log'),
    'mounter listening',
  );
  roles.push(mounter);
  const ready = await mounter.ready;
  o.say(
    `mounter runs FUSE daemons as ${ready.mounter === 'systemd' ? 'systemd units' : 'supervised processes'}`,
  );
  return socket;
}

const isAwsKey = (k: string) => k.startsWith('AWS_');
const withoutAwsKeys = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([k]) => !isAwsKey(k)));
const awsKeys = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([k]) => isAwsKey(k)));
