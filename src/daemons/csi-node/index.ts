import { chmod, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PLUGIN_VERSION } from '../../lib/csi/plugin.js';
import { bindUnixSocket, socketPathOf } from '../../lib/csi/socket.js';
import { bindTcp } from '../../lib/grpc/listen.js';
import { loadProto, lookupService } from '../../lib/grpc/proto.js';
import { unary } from '../../lib/grpc/status.js';
import { createLogger } from '../../lib/logger.js';
import { MeteredGrpcServer } from '../../lib/metrics/grpc.js';
import { RestClient } from '../../lib/rest/client.js';
import { selectAttacher } from './attacher.js';
import type { CsiNodeConfig } from './config.js';
import { nodeFsService } from './node-fs-service.js';
import { nodePathsService } from './node-paths-service.js';
import { nodeService } from './node-service.js';
import { NodeState } from './state.js';
import { BlockVolumes } from './volumes.js';

export type { CsiNodeConfig } from './config.js';

export interface CsiNodeDaemon {
  socketPath: string;
  /** host:port of the NodeFs (freeze / unfreeze) and NodePaths (HA) services. */
  fsEndpoint: string;
  attacher: string;
  /** Staged volumes found in the state file at start. */
  adopted: { volumes: number; healthy: number };
  stop(): Promise<void>;
}

/**
 * The block CSI node plugin: Identity + Node on a unix socket, NodeFs on a loopback port, volumes
 * attached through per-volume path proxies (separate processes, so they outlive a restart of this
 * one) and recorded in a state file.
 */
export async function start(config: CsiNodeConfig): Promise<CsiNodeDaemon> {
  const log = createLogger('csi-node', config.logLevel);
  const socketPath = socketPathOf(config.endpoint);
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  await chmod(config.stateDir, 0o700);
  const state = await NodeState.load(join(config.stateDir, 'state.json'), config.endpoint);
  const attacher = selectAttacher(config.attacher);
  const volumes = new BlockVolumes({
    stateDir: config.stateDir,
    state,
    attacher,
    log,
    pathTimeoutMs: config.pathTimeoutMs,
  });
  const adopted = await volumes.adopt();

  const csi = loadProto('csi.proto');
  const server = new MeteredGrpcServer();
  server.addService(lookupService(csi, 'csi.v1.Identity').service, {
    GetPluginInfo: unary(async () => ({
      name: config.driverName,
      vendor_version: PLUGIN_VERSION,
      manifest: { role: 'csi-node', attacher: attacher.kind },
    })),
    GetPluginCapabilities: unary(async () => ({
      capabilities: [{ service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' } }],
    })),
    Probe: unary(async () => ({ ready: { value: true } })),
  });
  server.addService(
    lookupService(csi, 'csi.v1.Node').service,
    nodeService({
      nodeId: config.nodeId,
      maxVolumes: config.maxVolumes,
      defaultFsType: config.defaultFsType,
      roots: config.roots,
      volumes,
      log,
    }),
  );
  // Whoever can connect can mount block devices anywhere below the roots: the socket is root's alone.
  await bindUnixSocket(server, socketPath);

  const fsServer = new MeteredGrpcServer();
  fsServer.addService(
    lookupService(loadProto('csi-node-fs.proto'), 'storctl.csinode.v1.NodeFs').service,
    nodeFsService(volumes),
  );
  fsServer.addService(
    lookupService(loadProto('csi-node-paths.proto'), 'storctl.csinode.v1.NodePaths').service,
    nodePathsService(volumes),
  );
  const fsEndpoint = await bindTcp(fsServer, config.fsListen);

  let stopped = false;
  let rest: RestClient | undefined;
  void (async () => {
    if (!config.restUrl) return;
    rest = new RestClient(config.restUrl, { timeoutMs: 5000 });
    for (let delay = 200; !stopped; delay = Math.min(delay * 2, 5000)) {
      try {
        await rest.call('PUT', `/app-nodes/${encodeURIComponent(config.nodeId)}`, {
          endpoint: fsEndpoint,
          labels: { 'storctl.io/csi-node': 'block' },
        });
        log.info(
          { nodeId: config.nodeId, endpoint: fsEndpoint, rest: config.restUrl },
          'registered as app node',
        );
        return;
      } catch (err) {
        log.warn({ err: (err as Error).message, retryMs: delay }, 'app-node registration failed; retrying');
        await new Promise((r) => setTimeout(r, delay).unref());
      }
    }
  })();

  log.info(
    { socket: socketPath, fsEndpoint, nodeId: config.nodeId, attacher: attacher.kind, ...adopted },
    'csi-node ready',
  );

  return {
    socketPath,
    fsEndpoint,
    attacher: attacher.kind,
    adopted,
    stop: async () => {
      // Staged volumes stay: their proxies, devices and mounts outlive the plugin by design.
      stopped = true;
      await Promise.all([
        new Promise<void>((r) => server.tryShutdown(() => r())),
        new Promise<void>((r) => fsServer.tryShutdown(() => r())),
      ]);
      await rest?.close();
      volumes.close();
      await state.close();
      await rm(socketPath, { force: true });
    },
  };
}
