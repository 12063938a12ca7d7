import * as grpc from '@grpc/grpc-js';
import { requireString } from '../../lib/csi/validate.js';
import { serviceClient } from '../../lib/grpc/client.js';
import { bindTcp } from '../../lib/grpc/listen.js';
import { GrpcError, unary } from '../../lib/grpc/status.js';
import { HaClusterClient, NodePathsClient } from '../../lib/ha/clients.js';
import { createLogger } from '../../lib/logger.js';
import { MeteredGrpcServer } from '../../lib/metrics/grpc.js';
import { PathDetector } from './detector.js';
import { Reporter } from './reporter.js';

export interface HaNodeConfig {
  nodeId: string;
  /** ha-cluster endpoints host:port, tried in order (the active one answers, a standby refuses). */
  clusters: string[];
  /** The csi-node's NodeFs/NodePaths endpoint host:port. */
  csiNode: string;
  /** HaNode service listen address. */
  listen: { host: string; port: number };
  /** How often every path is probed. */
  intervalMs: number;
  /** A probe unanswered this long counts as a failure. */
  probeTimeoutMs: number;
  /** Consecutive failed probes that make a path Failed (reported). */
  failAfter: number;
  aggregateMs: number;
  retransmitMs: number;
  /** How often a path that stays Failed is reported again (its switchover may have ended Errored). */
  reportAgainMs: number;
  /** Re-registration period (a restarted ha-cluster forgot this node). */
  registerMs: number;
  logLevel?: string;
}

export const HA_NODE_DEFAULTS = {
  intervalMs: 1000,
  probeTimeoutMs: 1000,
  failAfter: 2,
  aggregateMs: 50,
  retransmitMs: 2000,
  reportAgainMs: 30_000,
  registerMs: 5000,
};

export interface HaNodeDaemon {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * The HA node agent: probes the paths of the volumes staged on this node (through the csi-node's
 * path proxies), reports the failed ones to ha-cluster, and re-points a path when ha-cluster has
 * moved its volume's target (ReplacePath).
 */
export async function start(config: HaNodeConfig): Promise<HaNodeDaemon> {
  const log = createLogger('ha-node', config.logLevel);
  const paths = new NodePathsClient(config.csiNode);
  const clusters = config.clusters.map((c) => new HaClusterClient(c));
  const detector = new PathDetector(config.failAfter, config.reportAgainMs);
  let endpoint = '';
  const reporter = new Reporter({
    node: config.nodeId,
    endpoint: () => endpoint,
    clusters,
    aggregateMs: config.aggregateMs,
    retransmitMs: config.retransmitMs,
    log,
  });

  const server = new MeteredGrpcServer();
  server.addService(serviceClient('ha.proto', 'storctl.ha.v1.HaNode').service, {
    ReplacePath: unary(async (req: { volume_id?: string; new_target_uri?: string }) => {
      const volumeId = requireString(req.volume_id, 'volume_id');
      const target = requireString(req.new_target_uri, 'new_target_uri');
      detector.replacing(volumeId);
      try {
        await paths.replacePath(volumeId, target);
      } catch (err) {
        detector.replaced(volumeId, null);
        const e = err as grpc.ServiceError;
        throw new GrpcError(e.code ?? grpc.status.UNAVAILABLE, `csi-node: ${e.details ?? e.message}`);
      }
      detector.replaced(volumeId, target);
      log.info({ volumeId, target }, 'path replaced');
      return { target_uri: target };
    }),
    GetPaths: unary(async () => ({ paths: detector.list() })),
  });
  endpoint = await bindTcp(server, config.listen);

  let stopped = false;
  let tick: NodeJS.Timeout | null = null;
  const check = async () => {
    try {
      const { paths: probed } = await paths.listPaths(config.probeTimeoutMs);
      const { failed, lost } = detector.update(probed);
      for (const p of lost)
        log.error(
          { volumeId: p.volumeId, target: p.target, err: p.lastError },
          'path lost on this node: not reported, as no switchover can bring it back',
        );
      for (const p of failed) {
        log.warn(
          { volumeId: p.volumeId, target: p.target, err: p.lastError, failures: p.failures },
          'path failed',
        );
        reporter.add({ volume_id: p.volumeId, target_uri: p.target, reason: p.lastError });
      }
    } catch (err) {
      log.warn(
        { csiNode: config.csiNode, err: (err as Error).message },
        'cannot list paths from the csi-node',
      );
    }
    if (!stopped) tick = setTimeout(check, config.intervalMs);
  };
  void check();
  void reporter.register();
  const registerTimer = setInterval(() => void reporter.register(), config.registerMs);
  registerTimer.unref();

  log.info(
    { endpoint, node: config.nodeId, clusters: config.clusters, csiNode: config.csiNode },
    'ha-node ready',
  );
  return {
    endpoint,
    stop: async () => {
      stopped = true;
      if (tick) clearTimeout(tick);
      clearInterval(registerTimer);
      reporter.stop();
      await new Promise<void>((r) => server.tryShutdown(() => r()));
      paths.close();
      for (const c of clusters) c.close();
    },
  };
}
