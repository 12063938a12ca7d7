import { readFileSync } from 'node:fs';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookupService } from '../../lib/grpc/proto.js';
import { unary } from '../../lib/grpc/status.js';
import { createLogger } from '../../lib/logger.js';
import { loadDriverCredentials } from '../../lib/mount/credentials.js';
import { resolveFuseAdapter } from '../../lib/mount/fuse-binary.js';
import { type PublishResult, S3Volumes } from '../../lib/mount/s3-volumes.js';
import { type MounterDaemonConfig, PLUGIN_NAME, socketPathOf } from './config.js';
import { nodeService } from './node-service.js';
import { selectMounter } from './select-mounter.js';

export type { MounterDaemonConfig } from './config.js';

export const STORCTL_VERSION: string = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
).version;

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

  const daemon: MounterDaemon = {
    socketPath,
    mounterKind: mounter.kind,
    fuseBinary: adapter.name,
    stop: async () => {},
  };
  const csi = loadProto('csi.proto');
  const server = new grpc.Server();
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
      onPublished: (r) => (daemon.lastPublish = r),
    }),
  );

  // Whoever can connect can mount buckets: a socket directory we create is ours alone (0700). An
  // existing one (a kubelet plugin dir, or /tmp) keeps its mode; the socket itself is 0600.
  const created = await mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  if (created) await chmod(dirname(socketPath), 0o700);
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  await chmod(socketPath, 0o600);
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
