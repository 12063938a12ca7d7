import { everyStep } from '../../lib/every-step.js';
import { bindTcp } from '../../lib/grpc/listen.js';
import { loadProto, lookupService } from '../../lib/grpc/proto.js';
import { listenError } from '../../lib/listen-error.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import { MeteredGrpcServer } from '../../lib/metrics/grpc.js';
import { registerNbdMetrics, unregisterNbdMetrics } from '../../lib/metrics/nbd.js';
import { addPoolSource } from '../../lib/metrics/pools.js';
import { NbdServer } from '../../lib/nbd/server.js';
import type { KeySpace } from '../../lib/store/keys.js';
import type { Store } from '../../lib/store/types.js';
import { Engine } from './engine.js';
import { Liveness } from './liveness.js';
import { ioEngineHandlers } from './service.js';

export interface IoEngineConfig {
  nodeId: string;
  /** Default parent directory of pools (`<poolDir>/<pool name>`). */
  poolDir: string;
  grpc: { host: string; port: number };
  nbd: { host: string; port: number };
  /** The store (NodeSpec, liveness key, NexusInfo); null runs without one (tests of the data path). */
  store: Store | null;
  keySpace: KeySpace;
  /** Liveness lease TTL: the heartbeat deadline. */
  heartbeatTtlSeconds: number;
  /** A remote child request unanswered this long faults the child. */
  childTimeoutMs?: number;
  /** A remote child silent this long while I/O waits on it (a cut network) faults the child. */
  childKeepAliveMs?: number;
  /** NexusInfo write retries before the nexus shuts itself down (docs/mayastor-compat.md §3.6). */
  nexusInfoRetries?: number;
  /** How often each nexus checks whether a switchover fenced it (NexusInfo do_self_shutdown). */
  fenceCheckMs?: number;
  version?: string;
  logger?: Logger;
}

export interface IoEngineHandle {
  grpcEndpoint: string;
  nbdEndpoint: string;
  stop(): Promise<void>;
}

export const IO_ENGINE_SERVICE = 'storctl.io_engine.v1.IoEngine';

/** Start one storage node: NBD server, gRPC control API, node registration and liveness. */
export async function start(config: IoEngineConfig): Promise<IoEngineHandle> {
  const log = config.logger ?? createLogger('io-engine');
  const nbd = new NbdServer({
    onError: (err, remote) => log.warn({ remote, err: String(err) }, 'NBD client dropped'),
  });
  const nbdAddr = await nbd.listen(config.nbd.host, config.nbd.port).catch((err) => {
    throw listenError('NBD', `${config.nbd.host}:${config.nbd.port}`, '--nbd', err);
  });
  const nbdEndpoint = `${nbdAddr.host}:${nbdAddr.port}`;
  registerNbdMetrics(nbd);
  const engine = new Engine({
    nodeId: config.nodeId,
    poolDir: config.poolDir,
    store: config.store,
    keySpace: config.keySpace,
    nbd,
    log,
    childTimeoutMs: config.childTimeoutMs ?? 30_000,
    // A cut network is found in 10 s, not the request timeout's 30 s (NbdClient keepAlive).
    childKeepAliveMs: config.childKeepAliveMs ?? 10_000,
    nexusInfoRetries: config.nexusInfoRetries ?? 10,
  });
  // Every pool this engine has is Online (one it cannot open is not imported).
  const stopPoolMetrics = addPoolSource(() =>
    Promise.all(
      [...engine.pools.values()].map(async (p) => {
        const { capacity, used, committed } = await p.stats();
        return {
          node: config.nodeId,
          name: p.name,
          capacity,
          used,
          committed,
          status: 'Online' as const,
          refusedWrites: p.space.refused,
        };
      }),
    ),
  );

  const server = new MeteredGrpcServer({ 'grpc.max_receive_message_length': 4 * 1024 * 1024 });
  const service = lookupService(loadProto('io_engine.proto'), IO_ENGINE_SERVICE);
  const startedAt = new Date().toISOString();
  const version = config.version ?? '0.1.0';
  let grpcEndpoint = '';
  server.addService(
    service.service,
    ioEngineHandlers(engine, {
      nodeId: config.nodeId,
      get grpcEndpoint() {
        return grpcEndpoint;
      },
      nbdEndpoint,
      version,
      startedAt,
    }),
  );
  grpcEndpoint = await bindTcp(server, config.grpc).catch(async (err) => {
    await nbd.close();
    throw listenError('gRPC', `${config.grpc.host}:${config.grpc.port}`, '--grpc', err);
  });

  let liveness: Liveness | null = null;
  if (config.store) {
    liveness = new Liveness(
      config.store,
      config.keySpace,
      { node: config.nodeId, grpcEndpoint, nbdEndpoint, startedAt, version },
      config.heartbeatTtlSeconds,
      log,
    );
    try {
      await liveness.start();
    } catch (err) {
      server.forceShutdown();
      await nbd.close();
      throw err;
    }
  }

  // A nexus learns it was fenced at the latest here (reads never touch the store); a write to a
  // replica a newer nexus took fails at once (reservation.ts).
  let checking = false;
  const fenceTimer = config.store
    ? setInterval(() => {
        if (checking) return;
        checking = true;
        void Promise.all([...engine.nexuses.values()].map((n) => n.checkFenced().catch(() => false))).finally(
          () => {
            checking = false;
          },
        );
      }, config.fenceCheckMs ?? 2000)
    : null;
  fenceTimer?.unref();

  let stopping: Promise<void> | null = null;
  return {
    grpcEndpoint,
    nbdEndpoint,
    stop() {
      stopping ??= (async () => {
        if (fenceTimer) clearInterval(fenceTimer);
        await everyStep([
          () => new Promise<void>((r) => server.tryShutdown(() => r())),
          () => engine.serial(() => engine.stop()),
          () => nbd.close(),
          () => unregisterNbdMetrics(nbd),
          () => stopPoolMetrics(),
          () => liveness?.stop(),
        ]);
      })();
      return stopping;
    },
  };
}
