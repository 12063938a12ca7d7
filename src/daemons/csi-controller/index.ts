import { rm } from 'node:fs/promises';
import * as grpc from '@grpc/grpc-js';
import { PLUGIN_VERSION } from '../../lib/csi/plugin.js';
import { bindUnixSocket, socketPathOf } from '../../lib/csi/socket.js';
import { loadProto, lookupService } from '../../lib/grpc/proto.js';
import { GrpcError } from '../../lib/grpc/status.js';
import { createLogger } from '../../lib/logger.js';
import { MeteredGrpcServer } from '../../lib/metrics/grpc.js';
import { KubeClient } from '../../lib/orphans/kube/client.js';
import { RestClient } from '../../lib/rest/client.js';
import { ClaimlessSweep } from './claimless-sweep.js';
import type { CsiControllerConfig } from './config.js';
import { type Deps, rpc } from './context.js';
import { OpGuard } from './guard.js';
import { publishService } from './publish.js';
import { snapshotService } from './snapshots.js';
import { volumeService } from './volumes.js';

export type { CsiControllerConfig } from './config.js';
export { CSI_CONTROLLER_DEFAULTS, DRIVER_NAME_RE } from './config.js';

export interface CsiControllerDaemon {
  socketPath: string;
  stop(): Promise<void>;
}

const rpcCap = (type: string) => ({ rpc: { type } });

/** Advertised: what v1.10 defines and this driver serves (never GET_SNAPSHOT, reference/csi-spec.md). */
export const CONTROLLER_CAPABILITIES = [
  'CREATE_DELETE_VOLUME',
  'PUBLISH_UNPUBLISH_VOLUME',
  'LIST_VOLUMES',
  'GET_CAPACITY',
  'CREATE_DELETE_SNAPSHOT',
  'LIST_SNAPSHOTS',
  'CLONE_VOLUME',
  'EXPAND_VOLUME',
  'LIST_VOLUMES_PUBLISHED_NODES',
  'GET_VOLUME',
] as const;

/**
 * The block CSI driver's controller: CSI Identity + Controller on a unix socket, every operation
 * translated to core's REST API (seed 003). Stateless: core's store holds everything.
 */
export async function start(config: CsiControllerConfig): Promise<CsiControllerDaemon> {
  const log = createLogger('csi-controller', config.logLevel);
  const socketPath = socketPathOf(config.endpoint);
  const rest = new RestClient(config.restUrl, { timeoutMs: config.restTimeoutMs });
  const deps: Deps = { rest, guard: new OpGuard(), log, config };

  const csi = loadProto('csi.proto');
  // No channelz: nobody queries it here, and its per-call bookkeeping is CPU on every request.
  const server = new MeteredGrpcServer({ 'grpc.enable_channelz': 0 });
  server.addService(lookupService(csi, 'csi.v1.Identity').service, {
    GetPluginInfo: rpc(deps, 'GetPluginInfo', async () => ({
      name: config.driverName,
      vendor_version: PLUGIN_VERSION,
      manifest: { protocol: 'nbd' },
    })),
    GetPluginCapabilities: rpc(deps, 'GetPluginCapabilities', async () => ({
      capabilities: [
        { service: { type: 'CONTROLLER_SERVICE' } },
        { service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' } },
        { volume_expansion: { type: 'ONLINE' } },
      ],
    })),
    // Ready only when core answers: every controller call goes through it.
    Probe: rpc(deps, 'Probe', async () => {
      try {
        await rest.listNodes();
      } catch (err) {
        throw new GrpcError(grpc.status.FAILED_PRECONDITION, `not ready: ${(err as Error).message}`);
      }
      return { ready: { value: true } };
    }),
  });
  server.addService(lookupService(csi, 'csi.v1.Controller').service, {
    ...volumeService(deps),
    ...publishService(deps),
    ...snapshotService(deps),
    ControllerGetCapabilities: rpc(deps, 'ControllerGetCapabilities', async () => ({
      capabilities: CONTROLLER_CAPABILITIES.map(rpcCap),
    })),
    ControllerModifyVolume: rpc(deps, 'ControllerModifyVolume', async () => {
      throw new GrpcError(
        grpc.status.UNIMPLEMENTED,
        'ControllerModifyVolume is not supported (no MODIFY_VOLUME)',
      );
    }),
  });

  // Whoever can connect can create and delete volumes: the socket is the owner's alone.
  await bindUnixSocket(server, socketPath);
  log.info(
    { socket: socketPath, rest: config.restUrl, driver: config.driverName },
    'csi-controller listening',
  );

  let sweep: ClaimlessSweep | null = null;
  let kube: KubeClient | null = null;
  if (config.orphanGc) {
    kube = new KubeClient(config.orphanGc.kube);
    sweep = new ClaimlessSweep({ ...config.orphanGc, rest, kube, log });
    sweep.start();
    log.info(
      { mode: config.orphanGc.mode, kube: config.orphanGc.kube.source },
      'sweeping volumes without claims',
    );
  }

  return {
    socketPath,
    stop: async () => {
      await sweep?.stop();
      await kube?.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await rest.close();
      await rm(socketPath, { force: true });
    },
  };
}
