import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RestClient } from '../../../src/lib/rest/client.js';
import type { RestError } from '../../../src/lib/rest/errors.js';
import type { Volume } from '../../../src/lib/rest/types.js';
import { eventsPrefix } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { checkResponse, failOnDrift } from '../../helpers/openapi-validate.js';
import { withUnusedPorts } from '../../helpers/ports.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * A real cluster for core tests: io-engines and core as separate `storctl daemon …` processes on one
 * store (embedded SQLite in a temp dir, or a real etcd), each pool a directory in the temp dir.
 */
export interface Engine {
  node: string;
  proc: StorctlProcess;
  grpc: string;
  nbd: string;
}

export type Backend = 'embedded' | 'etcd';

// Every REST answer a core suite receives is checked against the OpenAPI document (drift fails the test).
failOnDrift();

export const POOL_CAPACITY = 1 << 30;

/**
 * Fast timings so reconcilers act within a test's patience; every one a flag of `daemon core`. A
 * faulted child is replaced at once (wait period 0, as before partial rebuild): the suites written
 * for that expect it; test/integration/core/partial-rebuild.test.ts sets a wait period of its own.
 */
export const FAST_CORE_FLAGS = [
  '--cache-period',
  '300ms',
  '--reconcile-period',
  '300ms',
  '--reconcile-idle-period',
  '600ms',
  '--gc-period',
  '1s',
  '--replica-gc-grace',
  '2s',
  '--node-deadline',
  '3s',
  '--lease-ttl',
  '3',
  '--request-timeout',
  '10s',
  '--faulted-child-wait-period',
  '0',
];

/** FAST_CORE_FLAGS with some flags' values replaced, e.g. `coreFlags({ '--gc-period': '1h' })`. */
export function coreFlags(values: Record<string, string>): string[] {
  // A flag FAST_CORE_FLAGS lacks would be dropped without a word: the suite would run without it.
  const unknown = Object.keys(values).filter((f) => !FAST_CORE_FLAGS.includes(f));
  if (unknown.length) throw new Error(`coreFlags: ${unknown.join(', ')} not in FAST_CORE_FLAGS`);
  return FAST_CORE_FLAGS.map((f, i, a) => values[a[i - 1]] ?? f);
}

function readyLine(proc: StorctlProcess, msg: string): Record<string, unknown> | null {
  for (const line of proc.output.split('\n')) {
    if (!line.includes(msg)) continue;
    try {
      return JSON.parse(line);
    } catch {
      // a partial line: not yet complete
    }
  }
  return null;
}

export class TestCluster {
  engines: Engine[] = [];
  cores: StorctlProcess[] = [];
  restUrl = '';
  rest!: RestClient;
  /** The etcd server this cluster started (etcd backend), for tests that pause the store. */
  etcd: EtcdServer | null = null;

  private constructor(
    readonly dir: string,
    readonly storeUrl: string,
    readonly clusterId: string,
    /** Set for every process the cluster starts (a test's LD_PRELOAD of libfaketime). */
    private readonly extraEnv: NodeJS.ProcessEnv = {},
  ) {}

  static async start(
    opts: {
      backend?: Backend;
      engines?: number;
      coreFlags?: string[];
      pools?: boolean;
      poolCapacity?: number;
      env?: NodeJS.ProcessEnv;
      /** etcd backend: its space quota (startEtcd's quotaBytes). */
      etcdQuotaBytes?: number;
    } = {},
  ): Promise<TestCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'storctl-core-'));
    let etcd: EtcdServer | null = null;
    let storeUrl = `sqlite:${join(dir, 'store.db')}`;
    if (opts.backend === 'etcd') {
      etcd = await startEtcd({ quotaBytes: opts.etcdQuotaBytes });
      storeUrl = etcd.url;
    }
    const c = new TestCluster(dir, storeUrl, `test-${Date.now().toString(36)}`, opts.env);
    c.etcd = etcd;
    try {
      for (let i = 1; i <= (opts.engines ?? 3); i++) await c.startEngine(`node-${i}`);
      await c.startCore(opts.coreFlags ?? FAST_CORE_FLAGS);
      if (opts.pools !== false)
        for (const e of c.engines) await c.createNodePool(e.node, opts.poolCapacity ?? POOL_CAPACITY);
    } catch (err) {
      // The caller never gets the cluster to stop: what started so far (etcd too) stops here.
      await c.stop().catch(() => {});
      throw err;
    }
    return c;
  }

  /** Pool `pool-<node>` on `node`, in the node's directory under the cluster's, through core. */
  createNodePool(node: string, capacity: number) {
    return this.rest.createPool(node, `pool-${node}`, { disks: [join(this.dir, node, 'pool')], capacity });
  }

  get env(): NodeJS.ProcessEnv {
    return {
      ...this.extraEnv,
      STORCTL_STORE: this.storeUrl,
      STORCTL_CLUSTER_ID: this.clusterId,
      STORCTL_LOG_LEVEL: 'info',
      STORCTL_REST: this.restUrl,
    };
  }

  /**
   * Start an io-engine; with `ports`, restart one on the ports it had. A fresh start takes its ports
   * below the kernel's ephemeral range (retried on a bind collision), so a restart on the same ports
   * cannot find them taken by some process's outgoing connection, as a `:0` port could be.
   */
  async startEngine(node: string, ports?: { grpc: string; nbd: string }): Promise<Engine> {
    if (ports) return this.launchEngine(node, ports);
    return withUnusedPorts(2, ([grpc, nbd]) =>
      this.launchEngine(node, { grpc: `127.0.0.1:${grpc}`, nbd: `127.0.0.1:${nbd}` }),
    );
  }

  private async launchEngine(node: string, ports: { grpc: string; nbd: string }): Promise<Engine> {
    const proc = new StorctlProcess(
      [
        'daemon',
        'io-engine',
        '--node',
        node,
        '--pool-dir',
        join(this.dir, node),
        '--grpc',
        ports.grpc,
        '--nbd',
        ports.nbd,
        '--heartbeat-ttl',
        '2',
      ],
      this.env,
    );
    const ready = await waitFor(
      async () => {
        const line = readyLine(proc, 'io-engine ready');
        if (!line) await proc.failIfExited(`io-engine ${node}`);
        return line;
      },
      {
        what: `io-engine ${node} ready`,
      },
    ).catch(async (e) => {
      await proc.kill('SIGKILL');
      throw e;
    });
    const engine: Engine = { node, proc, grpc: String(ready.grpcEndpoint), nbd: String(ready.nbdEndpoint) };
    this.engines = [...this.engines.filter((e) => e.node !== node), engine];
    return engine;
  }

  /** Start a core; resolves once it serves REST (a second core waits for the lease: pass wait=false). */
  async startCore(flags: string[] = FAST_CORE_FLAGS, wait = true): Promise<StorctlProcess> {
    const proc = new StorctlProcess(['daemon', 'core', '--rest', '127.0.0.1:0', ...flags], this.env);
    this.cores.push(proc);
    if (wait) await this.waitCoreReady(proc);
    return proc;
  }

  async waitCoreReady(proc: StorctlProcess, timeoutMs = 30_000): Promise<string> {
    const ready = await waitFor(
      async () => {
        const line = readyLine(proc, '"core ready"');
        if (!line) await proc.failIfExited('core');
        return line;
      },
      {
        what: 'core ready',
        timeoutMs,
      },
    );
    this.restUrl = String(ready.url);
    await this.rest?.close();
    this.rest = new RestClient(this.restUrl, { onResponse: checkResponse });
    return this.restUrl;
  }

  /** The events log, one line per event, oldest first (read straight from the store). */
  async events(): Promise<string[]> {
    const store = await openStore(this.storeUrl);
    try {
      const { kvs } = await store.range(eventsPrefix({ clusterId: this.clusterId, namespace: 'default' }));
      return kvs.map((kv) => kv.value);
    } finally {
      await store.close();
    }
  }

  /**
   * Volume `id` once `pick` accepts it (waitFor's options); on a timeout the volume and the last 20
   * events are printed first, to show what it waited on.
   */
  async volumeWhere(
    id: string,
    pick: (v: Volume) => boolean,
    opts: { what: string; timeoutMs?: number; intervalMs?: number },
  ): Promise<Volume> {
    return waitFor(async () => {
      const v = await this.rest.getVolume(id);
      return pick(v) ? v : null;
    }, opts).catch(async (err) => {
      console.log(JSON.stringify(await this.rest.getVolume(id), null, 1));
      console.log((await this.events()).slice(-20).join('\n'));
      throw err;
    });
  }

  /** A volume of `size` bytes with `replicas` replicas (thin, no self-heal unless said), published over NBD on `node`. */
  async createPublished(
    id: string,
    o: { size: number; replicas: number; node: string; thin?: boolean; selfHeal?: boolean },
  ) {
    await this.rest.createVolume(id, {
      size: o.size,
      replicas: o.replicas,
      thin: o.thin ?? true,
      policy: { self_heal: o.selfHeal ?? false },
    });
    return this.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: o.node });
  }

  /**
   * Scale a published volume to `replicas` (retried until core knows the pool just created) and
   * wait until its nexus has that many healthy children.
   */
  async scaleToHealthy(id: string, replicas: number): Promise<void> {
    await waitFor(
      async () =>
        this.rest
          .scaleVolume(id, replicas)
          .then(() => true)
          .catch((e: RestError) => (e.kind === 'ResourceExhausted' ? null : Promise.reject(e))),
      { what: `scale to ${replicas} (the new pool known to core)`, timeoutMs: 15_000 },
    );
    await waitFor(
      async () => {
        const v = await this.rest.getVolume(id);
        const kids = v.state.target?.children ?? [];
        return (
          v.state.status === 'Online' && kids.length === replicas && kids.every((k) => k.state === 'Online')
        );
      },
      { what: `${replicas} healthy children`, timeoutMs: 30_000 },
    );
  }

  engine(node: string): Engine {
    const e = this.engines.find((x) => x.node === node);
    if (!e) throw new Error(`no engine ${node}`);
    return e;
  }

  /**
   * Stop every daemon, then check that everything they wrote decodes through the spec codecs and
   * survives `store dump` → `store load` → `store dump` (so no test leaves a store nobody can read).
   */
  /** Stop every process; `beforeRemove` runs once they are gone, before the directory goes (e.g. an unmount). */
  async stop(beforeRemove?: () => Promise<void>): Promise<void> {
    await this.rest?.close().catch(() => {});
    for (const c of this.cores) await c.kill('SIGTERM');
    for (const e of this.engines) await e.proc.kill('SIGTERM');
    try {
      await checkStoreReadable(this.storeUrl, this.space);
    } finally {
      await this.etcd?.stop();
      await beforeRemove?.();
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  get space() {
    return { clusterId: this.clusterId, namespace: 'default' };
  }
}

export const newVolumeId = () => crypto.randomUUID();
