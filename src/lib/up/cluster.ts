import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, statfs } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { defaultCoreInstanceName, releaseExitedCoreLease } from '../core-lease.js';
import { closest } from '../did-you-mean.js';
import { ConflictError, ExitCode, StoreUnavailableError, UsageError } from '../errors.js';
import { IoEngineClient } from '../io-engine/client.js';
import { resolveFuseAdapter } from '../mount/fuse-binary.js';
import { isSameProcessAlive } from '../mount/processes.js';
import { humanizeBytes } from '../output/humanize.js';
import { claimDirectory, type HeldClaim } from '../process-claim.js';
import { RestClient } from '../rest/client.js';
import { type ClusterEndpoints, endpointsFile, readEndpoints, writeEndpoints } from '../rest/endpoint.js';
import { openStore, type StoreTlsFiles } from '../store/open.js';
import { Role, type RoleSpec } from './role.js';
import { flushStaged, stagedVolumes } from './staged.js';
import type { Announcement } from './supervisor.js';

const csiNodeStateDir = (dataDir: string) => join(dataDir, 'csi-node');

/** How long stopping waits for one staged volume's page cache to reach its target. */
const FLUSH_TIMEOUT_MS = 30_000;

/** The roles `up` runs, in start order. */
export const ROLE_NAMES = [
  'io-engine',
  'core',
  'csi-controller',
  'csi-node',
  'ha-cluster',
  'ha-node',
  'mounter',
] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

/** What each role needs running beside it in the same `up`. */
const ROLE_NEEDS: Partial<Record<RoleName, { roles: RoleName[]; why: string }>> = {
  'csi-controller': { roles: ['core'], why: "it serves CSI through core's REST API" },
  'csi-node': { roles: ['core'], why: "it asks core's REST API where volumes are published" },
  'ha-cluster': { roles: ['core'], why: "it moves targets through core's REST API" },
  'ha-node': {
    roles: ['csi-node', 'ha-cluster'],
    why: 'it watches the csi-node and reports to the ha-cluster agent',
  },
};

/**
 * `--roles core,io-engine,…`: the roles named, each known, with what they need. A usage error
 * (exit 2) names an unknown role (and the closest one) or a missing dependency.
 */
export function parseRoles(text: string): Set<RoleName> {
  const names = text
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  if (!names.length) throw new UsageError(`--roles names no role: pick from ${ROLE_NAMES.join(', ')}`);
  for (const n of names) {
    if (!(ROLE_NAMES as readonly string[]).includes(n)) {
      const near = closest(n, [...ROLE_NAMES]);
      throw new UsageError(
        `--roles: unknown role '${n}'${near ? ` (did you mean ${near}?)` : ''}; the roles are ${ROLE_NAMES.join(', ')}`,
      );
    }
  }
  const roles = new Set(names as RoleName[]);
  for (const r of roles) {
    const needs = ROLE_NEEDS[r];
    const missing = needs?.roles.filter((n) => !roles.has(n)) ?? [];
    if (missing.length)
      throw new UsageError(`--roles: ${r} needs ${missing.join(' and ')} (${needs?.why})`, {
        suggestions: [`storctl up --roles ${[...roles, ...missing].join(',')}`],
      });
  }
  return roles;
}

/** What a role logs while it waits on something outside it, and what `up` tells the operator. */
const WAITS: Readonly<Record<string, Announcement>> = {
  'another core holds the lease; waiting to take over': (r) => {
    const who = typeof r.instance === 'string' ? `core ${r.instance}` : 'another core';
    const ends =
      typeof r.expiresInS === 'number' && r.expiresInS >= 0
        ? ` (its lease ends in ${r.expiresInS} s unless that core renews it)`
        : '';
    return `waiting for the store lease, which ${who} holds${ends}: another \`storctl up\` or \`daemon core\` on this store, or this cluster's core that stopped while the store was unreachable; it takes over when that lease ends, Ctrl-C gives up`;
  },
};

export interface UpOptions {
  dataDir: string;
  storeUrl: string;
  /** TLS files of an etcd store (given to every role too). */
  storeTls?: StoreTlsFiles;
  clusterId: string;
  namespace: string;
  /** `storctl` entry point the children run (bin/run.js). */
  bin: string;
  restAddress: string;
  nodes: number;
  poolCapacity: number;
  /** The roles to run (default: every one); parseRoles checked what each needs. */
  roles?: ReadonlySet<RoleName>;
  logLevel: string;
  /** Core's single-writer lease TTL in seconds (a store outage longer than this stops core until it is back). */
  leaseTtlSeconds?: number;
  /** S3 endpoint of the mounter (cluster-wide setting); none = the FUSE binary's default (AWS). */
  s3Endpoint?: string;
  /** Progress lines for the operator. */
  say: (line: string) => void;
  /** Aborted (a signal): a start still waiting for a role gives up, and what started is stopped. */
  abort?: AbortSignal;
}

export interface UpCluster {
  /** Core's REST URL, or null when core is not among the roles. */
  rest: string | null;
  /** CSI socket of the S3 mounter, or null when no S3 FUSE binary is installed. */
  mounterSocket: string | null;
  /** CSI sockets of the block driver: the controller, and the node plugin (null unless root). */
  csiControllerSocket: string | null;
  csiNodeSocket: string | null;
  /** Where the csi-node accepts staging and target paths. */
  csiNodeRoot: string | null;
  /** The HA cluster agent's address (the node agent runs next to the csi-node). */
  haCluster: string | null;
  roles: Role[];
  /** Resolves with the first role that exits and cannot be started again. */
  failed: Promise<Role>;
  stop(): Promise<void>;
}

/** The name of `up`'s claim on its data dir (lib/process-claim.ts). */
const UP_CLAIM = 'up.claim';
/** How long a new `up` waits for the roles of a killed one to stop by themselves. */
const LEFTOVER_ROLES_WAIT_MS = 20_000;

/**
 * One `up` per data dir: claimed race-free, another live one there is a conflict (exit 4), said
 * before anything starts. Then the roles a killed `up` left are waited for (they stop when their
 * IPC channel to it closes), so the new ones find their pools, lease and sockets free.
 */
async function claimDataDir(o: UpOptions): Promise<HeldClaim> {
  const running = (pid: number) =>
    new ConflictError(
      'CLUSTER_RUNNING',
      `a cluster started by \`storctl up\` (pid ${pid}) already runs in ${o.dataDir} (REST ${readEndpoints(o.dataDir)?.rest ?? '<none>'})`,
      { suggestions: ['stop it with Ctrl-C (or kill that pid), or pass another --data-dir'] },
    );
  const claim = await claimDirectory(o.dataDir, UP_CLAIM, {}, (holder) => running(holder.pid));
  try {
    const previous = readEndpoints(o.dataDir);
    // An `up` of an earlier version claims nothing: its endpoints file names it.
    if (previous?.pid && previous.pid !== process.pid && (await isSameProcessAlive(previous.pid)))
      throw running(previous.pid);
    const roles = Object.entries(previous?.roles ?? {});
    let left = await liveRoles(roles);
    if (left.length) {
      o.say(
        `the roles of the previous \`storctl up\` here (pid ${previous?.pid}, gone) still run: ${left.map(([n, p]) => `${n} (pid ${p})`).join(', ')}; waiting for them to stop …`,
      );
      const deadline = Date.now() + LEFTOVER_ROLES_WAIT_MS;
      while (left.length && Date.now() < deadline && !o.abort?.aborted) {
        await new Promise((r) => setTimeout(r, 200));
        left = await liveRoles(left);
      }
    }
    if (left.length)
      throw new ConflictError(
        'CLUSTER_RUNNING',
        `the roles of a previous \`storctl up\` in ${o.dataDir} still run without it: ${left.map(([n, p]) => `${n} (pid ${p})`).join(', ')}`,
        { suggestions: [`stop them first: kill ${left.map(([, p]) => p).join(' ')}`] },
      );
    return claim;
  } catch (err) {
    await claim.release();
    throw err;
  }
}

/** Those of `roles` (name, pid) whose process still runs a storctl daemon. */
async function liveRoles(roles: [string, number][]): Promise<[string, number][]> {
  const live: [string, number][] = [];
  for (const [name, pid] of roles) {
    if (!Number.isSafeInteger(pid) || !(await isSameProcessAlive(pid))) continue;
    const argv = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (argv.split('\0').includes('daemon')) live.push([name, pid]);
  }
  return live;
}

/**
 * `storctl up`: three io-engines and core on one store, each its own `storctl daemon <role>`
 * process as on separate machines; one pool per node; endpoints published for flagless commands.
 */
export async function up(o: UpOptions): Promise<UpCluster> {
  const runs = (r: RoleName) => !o.roles || o.roles.has(r);
  const isRoot = process.getuid?.() === 0;
  const csiNodeRuns = runs('csi-node') && isRoot;
  // Asked for by name, a role that cannot run here is an error, not a note (as with every role).
  if (o.roles?.has('csi-node') && !isRoot)
    throw new UsageError(
      '--roles: csi-node needs root (it attaches block volumes with FUSE, loop devices and mounts)',
      { suggestions: ['run `storctl up` as root, or leave csi-node and ha-node out of --roles'] },
    );
  mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
  const claim = await claimDataDir(o);
  const nodes = `${o.nodes} io-engine(s)`;
  o.say(
    o.roles
      ? `starting ${[...o.roles].map((r) => (r === 'io-engine' ? nodes : r)).join(', ')} in ${o.dataDir} …`
      : `starting ${nodes} and core in ${o.dataDir} …`,
  );
  const logs = join(o.dataDir, 'logs');
  mkdirSync(logs, { recursive: true, mode: 0o700 });
  // S3 keys in the operator's environment are for the mounter alone (startMounter adds them back).
  const env: NodeJS.ProcessEnv = {
    ...withoutAwsKeys(process.env),
    STORCTL_STORE: o.storeUrl,
    STORCTL_ETCD_CA: o.storeTls?.ca ?? process.env.STORCTL_ETCD_CA,
    STORCTL_ETCD_CERT: o.storeTls?.cert ?? process.env.STORCTL_ETCD_CERT,
    STORCTL_ETCD_KEY: o.storeTls?.key ?? process.env.STORCTL_ETCD_KEY,
    STORCTL_CLUSTER_ID: o.clusterId,
    STORCTL_NAMESPACE: o.namespace,
    STORCTL_LOG_LEVEL: o.logLevel,
    // Every role picks a free loopback port (a fixed one would clash between the io-engines).
    STORCTL_METRICS_ADDRESS: undefined,
  };
  const roles: Role[] = [];
  const engines: { node: string; dir: string; role: Role; grpc?: string; nbd?: string }[] = [];
  let endpoints: ClusterEndpoints | null = null;
  let rest = '';
  const stop = async () => {
    // What the staged volumes' page cache holds goes to their targets while every role still runs.
    // Then the mounter and core: core stops writing and reconciling (it would rebuild what the next
    // step shuts down). Then every nexus shuts down cleanly while all of its children are still up,
    // so NexusInfo records them healthy and the next start rebuilds nothing; only then the io-engines.
    const engineRoles = new Set<Role>(engines.map((e) => e.role));
    const staged = csiNodeRuns ? await stagedVolumes(csiNodeStateDir(o.dataDir)) : [];
    if (staged.length) {
      o.say(`flushing the ${staged.length} volume(s) csi-node staged …`);
      for (const v of await flushStaged(staged, FLUSH_TIMEOUT_MS))
        o.say(`  ${v.volumeId}: not flushed within ${FLUSH_TIMEOUT_MS / 1000} s (its path is down?)`);
    }
    for (const r of [...roles].reverse()) if (!engineRoles.has(r)) await r.stop();
    await shutdownNexuses(
      engines.flatMap((e) => (e.grpc && e.role.running ? [e.grpc] : [])),
      o.say,
    );
    for (const e of [...engines].reverse()) await e.role.stop();
    // The mounts stay (a pod may still use them) and the next `up` serves them again.
    if (staged.length)
      o.say(
        [
          `${staged.length} volume(s) stay staged by csi-node, their I/O stalled until \`storctl up\` runs again with this data dir:`,
          ...staged.map((v) => `  ${v.volumeId}  ${v.stagingPath}`),
          'to release them, unpublish and unstage them (NodeUnpublishVolume, NodeUnstageVolume) while the cluster runs',
        ].join('\n'),
      );
    const file = endpointsFile(o.dataDir);
    if (existsSync(file) && JSON.parse(readFileSync(file, 'utf8')).pid === process.pid)
      rmSync(file, { force: true });
    await claim.release();
  };
  /**
   * endpoints.json, rewritten whenever a role comes back with another address. One write at a
   * time, each of what is known when it starts: roles restarted together (core and ha-cluster
   * after a store outage) leave the file with both.
   */
  let publishing = Promise.resolve();
  function publish(): Promise<void> {
    const write = async () => {
      if (!endpoints) return;
      endpoints.rest = rest || undefined;
      endpoints.ioEngines = engines.map((e) => ({ node: e.node, grpc: e.grpc ?? '', nbd: e.nbd ?? '' }));
      // Which process is which role, for an operator's `kill` or `ps` (and restarts change them).
      endpoints.roles = Object.fromEntries(roles.map((r) => [r.name, r.pid]));
      endpoints.metrics = Object.fromEntries(roles.map((r) => [r.name, r.metricsUrl]));
      await writeEndpoints(o.dataDir, endpoints);
    };
    const done = publishing.then(write);
    publishing = done.catch(() => {});
    return done;
  }
  const role = (
    name: string,
    args: RoleSpec['args'],
    log: string,
    readyMsg: string,
    { env: roleEnv = env, alsoWaiting = [], beforeRestart }: RoleOptions = {},
  ) => {
    const r = new Role(
      {
        name,
        bin: o.bin,
        args,
        env: roleEnv,
        logFile: join(logs, log),
        readyMsg,
        afterReady: publish,
        abort: o.abort,
        announce: WAITS,
        // A role that cannot reach the store waits for it (restarted with backoff, never given up).
        waitingExitCodes: [ExitCode.storeUnavailable, ...alsoWaiting],
        beforeRestart,
      },
      o.say,
    );
    roles.push(r);
    return r;
  };
  try {
    for (let i = 1; runs('io-engine') && i <= o.nodes; i++) {
      const node = `node-${i}`;
      const dir = join(o.dataDir, 'nodes', node);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const engine = {
        node,
        dir,
        // The ports of the last run (or of the process before a restart), when still free: targets
        // come back at the URIs they had.
        role: role(
          `io-engine ${node}`,
          async () => {
            const last = await lastPorts(dir);
            return [
              'daemon',
              'io-engine',
              '--node',
              node,
              '--pool-dir',
              dir,
              '--grpc',
              `127.0.0.1:${last.grpc}`,
              '--nbd',
              `127.0.0.1:${last.nbd}`,
            ];
          },
          `io-engine-${node}.log`,
          'io-engine ready',
        ),
        grpc: undefined as string | undefined,
        nbd: undefined as string | undefined,
      };
      engine.role.onReady(async (ready) => {
        engine.grpc = String(ready.grpcEndpoint);
        engine.nbd = String(ready.nbdEndpoint);
        await savePorts(dir, engine.grpc, engine.nbd);
      });
      engines.push(engine);
    }
    await Promise.all(engines.map((e) => e.role.start()));
    if (runs('core'))
      await startCore(o, role, (url) => {
        // Core came back elsewhere (its port was taken meanwhile): the roles that call it were
        // started with the old URL and would fail for good; started again, they get the new one
        // (a csi-node's staged volumes are served by their own proxy processes meanwhile).
        if (rest && url !== rest)
          for (const r of roles)
            if (['csi-controller', 'csi-node', 'ha-cluster'].includes(r.name))
              r.restart(`core now serves at ${url}, not ${rest}`);
        rest = url;
      });
    if (rest && engines.length) await createPools(rest, engines, o);
    const csi = await startCsi(o, role, () => rest, {
      controller: runs('csi-controller'),
      node: runs('csi-node'),
    });
    const haCluster = runs('ha-cluster')
      ? await startHa(o, role, () => rest, runs('ha-node') ? csi.csiNodeFs : undefined)
      : null;
    const mounterSocket = runs('mounter') ? await startMounter(o, env, role) : null;
    const { csiNodeFs: _, ...csiSockets } = csi;
    endpoints = {
      rest: rest || undefined,
      store: o.storeUrl,
      clusterId: o.clusterId,
      namespace: o.namespace,
      pid: process.pid,
      ioEngines: [],
      mounterSocket,
      haCluster,
      ...csiSockets,
    };
    await publish();
    const failed = Promise.race(roles.map((r) => r.failed));
    return { rest: rest || null, mounterSocket, ...csiSockets, haCluster, roles, failed, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Core, on the REST address asked for; `onUrl` gets the URL it listens on (again after a restart). */
async function startCore(o: UpOptions, role: RoleFactory, onUrl: (url: string) => void): Promise<void> {
  // Core instances that exited holding a lease not yet released (releaseLeasesOf).
  const exitedCores = new Set<string>();
  // After a restart, the address the first core got (its port when --rest asked for port 0): the
  // roles that call core (csi-controller, csi-node, ha-cluster) were given it, and flagless
  // commands need not follow a new one.
  let served: { host: string; port: number } | undefined;
  const core = role(
    'core',
    async () => [
      'daemon',
      'core',
      '--rest',
      served && (await portFree(served.port, served.host))
        ? `${served.host.includes(':') ? `[${served.host}]` : served.host}:${served.port}`
        : o.restAddress,
      '--cache-period',
      '5s',
      '--reconcile-period',
      '2s',
      '--reconcile-idle-period',
      '10s',
      // up restarts a dead io-engine within seconds, on its ports: a minute (the node deadline)
      // covers that with room to spare, so the child comes back with a partial rebuild, while a
      // node stopped for good leaves a volume Degraded for a minute, not upstream's ten.
      '--faulted-child-wait-period',
      '1m',
      ...(o.leaseTtlSeconds ? ['--lease-ttl', String(o.leaseTtlSeconds)] : []),
    ],
    'core.log',
    'core ready',
    {
      // The lease of a core that died stays in the store for its TTL (30 s by default), and the core
      // started in its place would wait that long: the exited core's lease is released first, and
      // when the store did not answer (an outage), again before each later start.
      beforeRestart: (pid) => {
        exitedCores.add(defaultCoreInstanceName(pid));
        return releaseLeasesOf(o, exitedCores);
      },
    },
  );
  core.onReady((ready) => {
    const url = new URL(String(ready.url));
    served ??= { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) };
    onUrl(String(ready.url));
  });
  await core.start();
}

/**
 * releaseExitedCoreLease on up's store for each core instance that exited; an instance is dropped
 * from `instances` once that is done (or nothing was left to release). What to tell the operator.
 */
export async function releaseLeasesOf(
  o: Pick<UpOptions, 'storeUrl' | 'storeTls' | 'clusterId' | 'namespace'>,
  instances: Set<string>,
): Promise<string | null> {
  const said: string[] = [];
  try {
    const store = await openStore(o.storeUrl, { tls: o.storeTls });
    try {
      const space = { clusterId: o.clusterId, namespace: o.namespace };
      for (const instance of instances) {
        const lease = await releaseExitedCoreLease(store, space, instance);
        instances.delete(instance);
        if (lease)
          said.push(
            `core: released the store lease ${lease} of the core that exited, so the next one takes over at once`,
          );
      }
    } finally {
      await store.close();
    }
  } catch (err) {
    // The store is down: tried again before the next start (the lease may expire meanwhile).
    if (!(err instanceof StoreUnavailableError)) {
      instances.clear();
      said.push(
        `core: could not release the store lease of the core that exited (${(err as Error).message}); the next one takes over once it expires`,
      );
    }
  }
  return said.join('\n') || null;
}

/** One pool per io-engine (`pool-<node>`), unless a previous run created it already. */
async function createPools(rest: string, engines: { node: string; dir: string }[], o: UpOptions) {
  const client = new RestClient(rest);
  try {
    const pools = await client.listPools();
    for (const e of engines) {
      const id = `pool-${e.node}`;
      if (pools.some((p) => p.id === id)) continue;
      await client.createPool(e.node, id, { disks: [join(e.dir, id)], capacity: o.poolCapacity });
      o.say(`created pool ${id} on ${e.node}`);
    }
    // The pools share the data dir's filesystem with the logs and the embedded store: filled by
    // thin volumes, it would take those down too (every write of core, every io-engine start).
    const fs = await statfs(o.dataDir);
    const size = fs.blocks * fs.bsize;
    if (engines.length * o.poolCapacity > size) {
      const also = o.storeUrl.startsWith('sqlite:') ? 'the embedded store and the logs' : 'the logs';
      o.say(
        `warning: the pools declare ${engines.length} × ${humanizeBytes(o.poolCapacity)}, more than the filesystem holding ${o.dataDir} (${humanizeBytes(size)}); thin volumes can fill it, and ${also} there then stop taking writes: pass a smaller --pool-capacity or a --data-dir on a larger disk`,
      );
    }
  } finally {
    await client.close();
  }
}

/**
 * The block CSI driver: the controller (over core's REST API, at the address core has now), and
 * the node plugin for this machine, which attaches volumes with FUSE and loop devices and so needs
 * root. Its staging and target paths must lie under `<data dir>/kubelet`, the kubelet's directory
 * of this one-machine cluster.
 */
async function startCsi(
  o: UpOptions,
  role: RoleFactory,
  rest: () => string,
  run: { controller: boolean; node: boolean },
) {
  const dir = join(o.dataDir, 'csi');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const none = { csiNodeSocket: null, csiNodeRoot: null, csiNodeFs: null };
  let csiControllerSocket: string | null = null;
  if (run.controller) {
    const socket = join(dir, 'controller.sock');
    csiControllerSocket = socket;
    await role(
      'csi-controller',
      () => ['daemon', 'csi-controller', '--endpoint', `unix://${socket}`, '--rest', rest()],
      'csi-controller.log',
      'csi-controller listening',
    ).start();
  }
  if (!run.node) return { csiControllerSocket, ...none };
  if (process.getuid?.() !== 0) {
    o.say('csi-node not started: attaching block volumes (FUSE, loop devices, mounts) needs root');
    return { csiControllerSocket, ...none };
  }
  // A fixed port for the node's NodeFs/NodePaths service: the HA node agent keeps finding a restarted csi-node.
  const csiNodeFs = `127.0.0.1:${await anyFreePort()}`;
  const csiNodeSocket = join(dir, 'node.sock');
  const csiNodeRoot = join(o.dataDir, 'kubelet');
  mkdirSync(csiNodeRoot, { recursive: true, mode: 0o750 });
  await role(
    'csi-node',
    () => [
      'daemon',
      'csi-node',
      '--endpoint',
      `unix://${csiNodeSocket}`,
      '--node-id',
      'node-1',
      '--state-dir',
      csiNodeStateDir(o.dataDir),
      '--root',
      csiNodeRoot,
      '--fs-listen',
      csiNodeFs,
      '--rest',
      rest(),
    ],
    'csi-node.log',
    'csi-node ready',
  ).start();
  return { csiControllerSocket, csiNodeSocket, csiNodeRoot, csiNodeFs };
}

/** The exit code of a daemon whose store lease was lost (core, ha-cluster). */
const EXIT_LEASE_LOST = 128;

/**
 * HA: the cluster agent (on a port fixed for this run, so the node agent finds it again after a
 * restart), and the node agent of this machine when the csi-node runs (volumes attached elsewhere
 * have no path here to watch). `csiNodeFs`: the csi-node's NodeFs address; null when no csi-node runs,
 * undefined when `--roles` left ha-node out.
 */
async function startHa(
  o: UpOptions,
  role: RoleFactory,
  rest: () => string,
  csiNodeFs: string | null | undefined,
) {
  const haCluster = `127.0.0.1:${await anyFreePort()}`;
  await role(
    'ha-cluster',
    () => ['daemon', 'ha-cluster', '--rest', rest(), '--grpc', haCluster, '--retry-delay', '2s'],
    'ha-cluster.log',
    'ha-cluster active',
    // Its leadership lease goes in a store outage, as core's does: it comes back with the store.
    { alsoWaiting: [EXIT_LEASE_LOST] },
  ).start();
  if (csiNodeFs === undefined) return haCluster;
  if (!csiNodeFs) {
    o.say('ha-node not started: it watches the csi-node, which needs root');
    return haCluster;
  }
  await role(
    'ha-node',
    () => [
      'daemon',
      'ha-node',
      '--node',
      'node-1',
      '--cluster',
      haCluster,
      '--csi-node',
      csiNodeFs,
      '--grpc',
      '127.0.0.1:0',
    ],
    'ha-node.log',
    'ha-node ready',
  ).start();
  return haCluster;
}

/** A port nothing listens on now (the kernel's choice). */
function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

type RoleFactory = (
  name: string,
  args: RoleSpec['args'],
  log: string,
  readyMsg: string,
  options?: RoleOptions,
) => Role;

interface RoleOptions {
  /** The role's environment (default: the one every role gets). */
  env?: NodeJS.ProcessEnv;
  /** More exit codes that mean "waiting for the store" (see RoleSpec.waitingExitCodes). */
  alsoWaiting?: number[];
  beforeRestart?: RoleSpec['beforeRestart'];
}

/**
 * The S3 CSI node plugin. `--mounter auto` runs FUSE daemons as systemd units when a systemd manager
 * answers on the system bus, else as supervised processes. Without an S3 FUSE binary there is
 * nothing it could mount: the cluster starts without it and says how to add it.
 */
async function startMounter(o: UpOptions, env: NodeJS.ProcessEnv, role: RoleFactory) {
  try {
    await resolveFuseAdapter(undefined, env);
  } catch (err) {
    o.say(`mounter not started: ${(err as Error).message}`);
    return null;
  }
  const stateDir = join(o.dataDir, 'mounter');
  const socket = join(stateDir, 'csi.sock');
  const args = ['daemon', 'mounter', '--endpoint', `unix://${socket}`, '--node-id', 'node-1'];
  // Targets under the cluster's kubelet directory, as for the csi-node.
  mkdirSync(join(o.dataDir, 'kubelet'), { recursive: true, mode: 0o750 });
  args.push('--mounter', 'auto', '--state-dir', stateDir, '--root', join(o.dataDir, 'kubelet'));
  if (o.s3Endpoint) args.push('--s3-endpoint', o.s3Endpoint);
  const mounter = role('mounter', () => args, 'mounter.log', 'mounter listening', {
    env: { ...env, ...awsKeys(process.env) },
  });
  const ready = await mounter.start();
  o.say(
    `mounter runs FUSE daemons as ${ready.mounter === 'systemd' ? 'systemd units' : 'supervised processes'}`,
  );
  return socket;
}

/** `nodes/<node>/ports.json`: the gRPC and NBD ports an io-engine of `up` last listened on. */
const portsFile = (nodeDir: string) => join(nodeDir, 'ports.json');

async function savePorts(nodeDir: string, grpc: string, nbd: string): Promise<void> {
  const port = (hostPort: string) => Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
  writeFileSync(portsFile(nodeDir), `${JSON.stringify({ grpc: port(grpc), nbd: port(nbd) })}\n`, {
    mode: 0o600,
  });
}

/** The ports of the last run where nothing else listens on them now; 0 (any free port) otherwise. */
async function lastPorts(nodeDir: string): Promise<{ grpc: number; nbd: number }> {
  let saved: { grpc?: unknown; nbd?: unknown } = {};
  try {
    saved = JSON.parse(readFileSync(portsFile(nodeDir), 'utf8'));
  } catch {
    // first start (or an unreadable file): any free port
  }
  const usable = async (p: unknown) =>
    typeof p === 'number' && Number.isInteger(p) && p > 0 && p < 65536 && (await portFree(p)) ? p : 0;
  return { grpc: await usable(saved.grpc), nbd: await usable(saved.nbd) };
}

function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** Shut every nexus down cleanly (ShutdownNexus records clean_shutdown in NexusInfo). */
async function shutdownNexuses(grpcEndpoints: string[], say: (line: string) => void): Promise<void> {
  await Promise.all(
    grpcEndpoints.map(async (endpoint) => {
      const client = new IoEngineClient(endpoint, { deadlineMs: 10_000 });
      try {
        for (const n of await client.listNexuses()) await client.shutdownNexus(n.uuid);
      } catch (err) {
        say(
          `could not shut down the nexuses of the io-engine at ${endpoint} cleanly: ${(err as Error).message}`,
        );
      } finally {
        client.close();
      }
    }),
  );
}

const isAwsKey = (k: string) => k.startsWith('AWS_');
const withoutAwsKeys = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([k]) => !isAwsKey(k)));
const awsKeys = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([k]) => isAwsKey(k)));
