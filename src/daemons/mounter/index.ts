import { rm } from 'node:fs/promises';
import { PLUGIN_VERSION } from '../../lib/csi/plugin.js';
import { bindUnixSocket, socketPathOf } from '../../lib/csi/socket.js';
import { loadProto, lookupService } from '../../lib/grpc/proto.js';
import { unary } from '../../lib/grpc/status.js';
import { createLogger } from '../../lib/logger.js';
import { MeteredGrpcServer } from '../../lib/metrics/grpc.js';
import { loadDriverCredentials } from '../../lib/mount/credentials.js';
import { resolveFuseAdapter } from '../../lib/mount/fuse-binary.js';
import { type PublishResult, S3Volumes } from '../../lib/mount/s3-volumes.js';
import { writeMounterRoots } from '../../lib/mount/state-dir.js';
import { type MounterDaemonConfig, PLUGIN_NAME } from './config.js';
import { nodeService } from './node-service.js';
import { selectMounter } from './select-mounter.js';

export type { MounterDaemonConfig } from './config.js';

export const STORCTL_VERSION: string = PLUGIN_VERSION;

export interface MounterDaemon {
  socketPath: string;
  mounterKind: 'systemd' | 'process';
  fuseBinary: string;
  lastPublish?: PublishResult;
  stop(): Promise<void>;
}

/** The S3 CSI node plugin: Identity + Node on a unix socket, FUSE daemons through a Mounter. */
export async function start(config: MounterDaemonConfig): Promise<MounterDaemon> {
  const log = createLogger('mounter', config.logLevel);
  const socketPath = socketPathOf(config.endpoint);
  const adapter = await resolveFuseAdapter(config.fuseBinary, config.env ?? process.env);
  const driverCredentials = await loadDriverCredentials(config.env ?? process.env, config.secretsFile);
  const mounter = await selectMounter(config.mounter, config.systemdBus, STORCTL_VERSION, log);
  const volumes = await S3Volumes.open({
    stateDir: config.stateDir,
    mounter,
    adapter,
    endpoint: config.s3Endpoint,
    region: config.s3Region,
    mountTimeoutMs: config.mountTimeoutMs,
    log,
  });
  const roots = config.roots ?? ['/var/lib/kubelet'];
  // What `doctor mounts` with this state dir checks: this mounter's targets, not another's.
  await writeMounterRoots(config.stateDir, roots);

  const daemon: MounterDaemon = {
    socketPath,
    mounterKind: mounter.kind,
    fuseBinary: adapter.name,
    stop: async () => {},
  };
  const csi = loadProto('csi.proto');
  const server = new MeteredGrpcServer();
  server.addService(lookupService(csi, 'csi.v1.Identity').service, {
    GetPluginInfo: unary(async () => ({
      name: PLUGIN_NAME,
      vendor_version: STORCTL_VERSION,
      manifest: { mounter: mounter.kind, fuse_binary: adapter.name },
    })),
    GetPluginCapabilities: unary(async () => ({ capabilities: [] })),
    Probe: unary(async () => ({ ready: { value: true } })),
  });
  server.addService(
    lookupService(csi, 'csi.v1.Node').service,
    nodeService({
      nodeId: config.nodeId,
      volumes,
      driverCredentials,
      log,
      roots,
      onPublished: (r) => (daemon.lastPublish = r),
    }),
  );

  // Whoever can connect can mount buckets: the socket is the owner's alone.
  await bindUnixSocket(server, socketPath);
  log.info(
    { socket: socketPath, mounter: mounter.kind, fuseBinary: adapter.name, nodeId: config.nodeId },
    'mounter listening',
  );

  daemon.stop = async () => {
    // Mounts stay: the FUSE daemons outlive the plugin by design.
    await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    await volumes.close();
    await mounter.close();
    await rm(socketPath, { force: true });
  };
  return daemon;
}
