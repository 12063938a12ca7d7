import { Flags } from '@oclif/core';
import { socketPathOf } from '../../daemons/mounter/config.js';
import { start } from '../../daemons/mounter/index.js';
import { durationFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { UsageError } from '../../lib/errors.js';
import { metricsAddressFlag, serveMetrics } from '../../lib/metrics/flag.js';
import { KUBELET_DIR, targetRoots } from '../../lib/mount/confine.js';
import { defaultMounterStateDir } from '../../lib/mount/state-dir.js';

export default class DaemonMounter extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    'S3 CSI node plugin: serves CSI Identity + Node on a unix socket and mounts buckets with FUSE daemons run as transient systemd units (or supervised processes where no systemd manager answers)';

  static override examples = [
    '<%= config.bin %> daemon mounter --endpoint unix:///var/lib/kubelet/plugins/s3.csi.storctl.io/csi.sock --node-id node-1 --s3-endpoint https://s3.example.com',
  ];

  static override flags = {
    'metrics-address': metricsAddressFlag(),
    endpoint: Flags.string({
      description: 'CSI socket, unix:///path/csi.sock',
      required: true,
      env: 'STORCTL_MOUNTER_ENDPOINT',
    }),
    'node-id': Flags.string({
      description: 'node id returned by NodeGetInfo',
      required: true,
      env: 'STORCTL_NODE_ID',
    }),
    mounter: Flags.option({
      description: 'how FUSE daemons run',
      options: ['systemd', 'process', 'auto'] as const,
      default: 'auto' as const,
      env: 'STORCTL_MOUNTER',
    })(),
    'systemd-bus': Flags.string({
      description: 'D-Bus address of the systemd manager (default: the system bus)',
      env: 'STORCTL_SYSTEMD_BUS',
    }),
    'fuse-binary': Flags.option({
      description: 'FUSE daemon (default: the first installed of mount-s3, s3fs)',
      options: ['s3fs', 'mount-s3'] as const,
      env: 'STORCTL_FUSE_BINARY',
    })(),
    's3-endpoint': Flags.string({
      description: 'S3 endpoint URL for every mount (cluster-wide)',
      env: 'STORCTL_S3_ENDPOINT',
    }),
    's3-region': Flags.string({
      description: 'S3 region for every mount (cluster-wide)',
      env: 'STORCTL_S3_REGION',
    }),
    root: Flags.string({
      description: `directory target paths must lie below (repeatable; default ${KUBELET_DIR})`,
      multiple: true,
      env: 'STORCTL_MOUNTER_ROOTS',
    }),
    'state-dir': Flags.string({
      description: 'state directory (mount records, credential files, daemon logs)',
      env: 'STORCTL_MOUNTER_STATE_DIR',
    }),
    'secrets-file': Flags.string({
      description:
        'driver-level keys file (access_key_id=..., secret_access_key=...; mode 0600); default: AWS_* environment',
      env: 'STORCTL_S3_SECRETS_FILE',
    }),
    'mount-timeout': durationFlag({
      description: 'how long to wait for a mount to appear',
      default: 30_000,
      env: 'STORCTL_MOUNT_TIMEOUT',
      positive: true,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DaemonMounter);
    try {
      socketPathOf(flags.endpoint);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    if (flags['s3-endpoint'] && !/^https?:\/\/[^\s/]+(\/[^\s]*)?$/.test(flags['s3-endpoint'])) {
      throw new UsageError(`--s3-endpoint '${flags['s3-endpoint']}' is not an http(s) URL`);
    }
    const metrics = await serveMetrics(flags['metrics-address'], 'mounter');
    const daemon = await start({
      endpoint: flags.endpoint,
      nodeId: flags['node-id'],
      roots: targetRoots(flags.root),
      mounter: flags.mounter,
      systemdBus: flags['systemd-bus'],
      fuseBinary: flags['fuse-binary'],
      s3Endpoint: flags['s3-endpoint'],
      s3Region: flags['s3-region'],
      stateDir: flags['state-dir'] ?? defaultMounterStateDir(),
      secretsFile: flags['secrets-file'],
      mountTimeoutMs: flags['mount-timeout'],
      logLevel: this.globals.logLevel === 'warn' ? 'info' : this.globals.logLevel,
    });
    this.logToStderr(
      `mounter listening on ${daemon.socketPath} (mounter: ${daemon.mounterKind}, FUSE binary: ${daemon.fuseBinary})`,
    );
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await daemon.stop();
    await metrics?.close();
  }
}
