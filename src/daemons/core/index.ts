import { createLogger, type Logger } from '../../lib/logger.js';
import { addStateSource } from '../../lib/metrics/catalog.js';
import { meterStore } from '../../lib/metrics/store.js';
import { clusterHeaderValue } from '../../lib/rest/endpoint.js';
import { createdState, specStatusName } from '../../lib/specs/index.js';
import { openStore } from '../../lib/store/open.js';
import type { Store } from '../../lib/store/types.js';
import type { CoreConfig } from './config.js';
import type { CoreContext } from './context.js';
import { type EngineFactory, Engines } from './engines.js';
import { makeEvent } from './events.js';
import { volumeStatus } from './health.js';
import { acquireLeaseLock } from './lease-lock.js';
import { GuardedWriter } from './persist.js';
import { observeRebuilds, RebuildHistory, rebuildEvent } from './rebuild-history.js';
import { ReconcileLoop } from './reconcile/loop.js';
import { recoverAtStartup } from './recovery.js';
import type { Registry as CoreRegistry } from './registry.js';
import { Registry } from './registry.js';
import { Router } from './rest/router.js';
import { openApiRoutes } from './rest/routes-openapi.js';
import { resourceRoutes } from './rest/routes-resources.js';
import { volumeRoutes } from './rest/routes-volumes.js';
import { watchRoutes } from './rest/routes-watches.js';
import { startRestServer } from './rest/server.js';
import { VolumeWatches } from './watches.js';

export type { CoreConfig } from './config.js';
export { CORE_DEFAULTS } from './config.js';

export interface CoreDaemon {
  /** REST base URL, `http://127.0.0.1:PORT` (the API lives under /v0). */
  url: string;
  /** Resolves with the reason when the lease is lost; the process must then exit non-zero. */
  leaseLost: Promise<string>;
  /** Milestones in ms since start(): lease held, specs loaded, first reconcile pass done. */
  timings: { lease: number; loaded: number; recovered: number; reconciled: number };
  ctx: CoreContext;
  loop: ReconcileLoop;
  stop(): Promise<void>;
}

export interface CoreDeps {
  engineFactory?: EngineFactory;
  log?: Logger;
  /** Aborts waiting for the lease (a second core blocks until the first one's lease is gone). */
  signal?: AbortSignal;
}

/**
 * Start core: take the single-writer lease, load every spec, finish or roll back pending operations,
 * then serve REST v0 and run the reconcilers.
 */
export async function start(config: CoreConfig, deps: CoreDeps = {}): Promise<CoreDaemon> {
  const t0 = Date.now();
  const log = deps.log ?? createLogger('core');
  const space = { clusterId: config.clusterId, namespace: config.namespace };
  const store: Store = meterStore(await openStore(config.storeUrl, { tls: config.storeTls }));
  let lostReason: (why: string) => void = () => {};
  const leaseLost = new Promise<string>((resolve) => {
    lostReason = resolve;
  });
  let lock: Awaited<ReturnType<typeof acquireLeaseLock>>;
  try {
    lock = await acquireLeaseLock(store, space, {
      ttlSeconds: config.leaseTtlSeconds,
      instanceName: config.instanceName,
      log,
      signal: deps.signal,
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  const tLease = Date.now() - t0;
  let stopping = false;
  const onLost = (why: string) => {
    if (stopping) return;
    log.error({ why }, 'core lost its store lease; it stops writing');
    lostReason(why);
  };
  lock.lost.addEventListener('abort', () => onLost('lease expired or revoked'), { once: true });
  const writer = new GuardedWriter(store, lock, onLost);
  const registry = new Registry(store, space, writer, log);
  let loop: ReconcileLoop | undefined;
  let engines: Engines | undefined;
  let rest: Awaited<ReturnType<typeof startRestServer>>;
  // A finished rebuild is an event of its volume (found through the nexus's owner).
  const rebuilds = new RebuildHistory((nexus, record) => {
    const volume = registry.nexuses.get(nexus)?.owner;
    if (!volume) return;
    registry
      .persist({ events: [rebuildEvent(volume, record)] })
      .catch((err) => log.warn({ nexus, err: (err as Error).message }, 'recording a rebuild event failed'));
  });
  const watches = new VolumeWatches(registry, log);
  let timings: CoreDaemon['timings'];
  let ctx: CoreContext;
  try {
    const engineFactory =
      deps.engineFactory ?? (await import('./engine-grpc.js')).grpcEngineFactory(config.requestTimeoutMs);
    engines = new Engines(registry, observeRebuilds(engineFactory, rebuilds));
    ctx = { registry, engines, config, log, wake: () => loop?.wake() };
    await registry.load();
    const tLoaded = Date.now() - t0;
    await registry.watchLiveness();
    await recoverAtStartup(ctx);
    const tRecovered = Date.now() - t0;
    loop = new ReconcileLoop(ctx);
    registry.onNodeChange = () => loop?.wake();
    const busy = await loop.pass();
    const tReconciled = Date.now() - t0;
    loop.start(busy);

    const router = new Router();
    volumeRoutes(router, ctx, rebuilds);
    resourceRoutes(router, ctx);
    await watches.load();
    watchRoutes(router, ctx, watches);
    openApiRoutes(router);
    rest = await startRestServer(router, config.restHost, config.restPort, log, clusterHeaderValue(space));
    timings = { lease: tLease, loaded: tLoaded, recovered: tRecovered, reconciled: tReconciled };
  } catch (err) {
    // A core that cannot start must not sit on the lease: the next one would wait a whole TTL.
    stopping = true;
    await watches.close().catch(() => {});
    await loop?.stop().catch(() => {});
    await registry.close().catch(() => {});
    engines?.close();
    await lock.release().catch(() => {});
    await store.close().catch(() => {});
    throw err;
  }
  await registry
    .persist({
      events: [
        makeEvent(
          'core',
          config.instanceName,
          'Started',
          `REST ${rest.url}, ${registry.volumes.size} volume(s) loaded`,
        ),
      ],
    })
    .catch(() => {});
  log.info({ url: rest.url, volumes: registry.volumes.size, ms: Date.now() - t0 }, 'core ready');
  const unmeter = stateMetrics(registry);

  let stopped = false;
  return {
    url: rest.url,
    leaseLost,
    timings,
    ctx,
    loop,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      stopping = true;
      unmeter();
      await rest.close();
      await watches.close();
      await loop?.stop();
      await registry.close();
      engines?.close();
      await lock.release();
      await store.close();
    },
  };
}

/** storctl_volumes / _replicas / _nexuses by state, counted from the registry at each scrape. */
function stateMetrics(registry: CoreRegistry): () => void {
  const count =
    <T>(items: Iterable<T>, stateOf: (item: T) => string) =>
    () => {
      const m = new Map<string, number>();
      for (const item of items) {
        const s = stateOf(item);
        m.set(s, (m.get(s) ?? 0) + 1);
      }
      return m;
    };
  // Created specs by their state; the others by their spec status (Creating, Deleting).
  const specState = (status: Parameters<typeof specStatusName>[0]) =>
    String(createdState(status) ?? specStatusName(status));
  const stops = [
    addStateSource('volumes', () =>
      count(registry.volumes.values(), (v) =>
        specStatusName(v.status) === 'Created' ? volumeStatus(registry, v) : specStatusName(v.status),
      )(),
    ),
    addStateSource('replicas', () => count(registry.replicas.values(), (r) => specState(r.status))()),
    addStateSource('nexuses', () => count(registry.nexuses.values(), (n) => specState(n.spec_status))()),
  ];
  return () => {
    for (const stop of stops) stop();
  };
}
