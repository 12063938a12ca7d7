import { hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import { Flags } from '@oclif/core';
import { DEFAULT_PATH_TIMEOUT_MS, defaultCsiNodeStateDir } from '../../daemons/csi-node/config.js';
import { FS_TYPES } from '../../daemons/csi-node/fs-ops.js';
import { start } from '../../daemons/csi-node/index.js';
import { durationFlag, hostPortFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { BLOCK_DRIVER_NAME } from '../../lib/csi/plugin.js';
import { socketPathOf } from '../../lib/csi/socket.js';
import { UsageError } from '../../lib/errors.js';
import { metricsAddressFlag, serveMetrics } from '../../lib/metrics/flag.js';
import { KUBELET_DIR, targetRoots } from '../../lib/mount/confine.js';

export default class DaemonCsiNode extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    `Block CSI node plugin: serves CSI Identity + Node on a unix socket and attaches volumes (nbd://) as filesystems or raw block devices

Each staged volume goes through a per-volume NBD path proxy (its own process, so volumes keep working while this daemon restarts; HA re-points it to a new target), then the kernel NBD client where the nbd module exists, else a loop device on a FUSE file the proxy itself serves (--attacher fuse-loop). A small gRPC service (NodeFs) on a loopback port freezes and thaws filesystems for snapshots; with --rest the node registers it with core as an app node. What is attached is kept in a state file, so a restarted daemon serves and unstages its volumes again.`;

  static override examples = [
    '<%= config.bin %> daemon csi-node --endpoint unix:///var/lib/kubelet/plugins/io.storctl.csi-block/csi.sock --node-id node-1 --rest http://127.0.0.1:8081',
    '<%= config.bin %> daemon csi-node --endpoint unix:///tmp/csi/node.sock --node-id node-1 --root /tmp/csi/pods --state-dir /tmp/csi/state',
  ];

  static override flags = {
    'metrics-address': metricsAddressFlag(),
    endpoint: Flags.string({
      description: 'CSI socket, unix:///path/csi.sock',
      required: true,
      env: 'STORCTL_CSI_NODE_ENDPOINT',
    }),
    'node-id': Flags.string({
      description: 'node id returned by NodeGetInfo and registered with core (default: the host name)',
      env: 'STORCTL_NODE_ID',
    }),
    rest: Flags.string({
      description: 'core REST URL to register this node with as an app node (none: no registration)',
      env: 'STORCTL_REST',
    }),
    root: Flags.string({
      description: `directory staging and target paths must lie below (repeatable; default ${KUBELET_DIR})`,
      multiple: true,
      env: 'STORCTL_CSI_NODE_ROOTS',
    }),
    'state-dir': Flags.string({
      description: 'state directory (state file, proxy sockets, FUSE mount points, logs)',
      env: 'STORCTL_CSI_NODE_STATE_DIR',
    }),
    'fs-listen': Flags.string({
      description: 'HOST:PORT of the NodeFs freeze/unfreeze service (port 0: a free port)',
      default: '127.0.0.1:0',
      env: 'STORCTL_CSI_NODE_FS_LISTEN',
    }),
    attacher: Flags.option({
      description:
        'how a volume becomes a block device (auto: kernel NBD when the nbd module exists, else fuse-loop: a loop device on a FUSE file the path proxy serves)',
      options: ['auto', 'kernel-nbd', 'fuse-loop', 'nbdfuse-loop'] as const,
      default: 'auto' as const,
      env: 'STORCTL_CSI_NODE_ATTACHER',
    })(),
    'max-volumes': Flags.integer({
      description: 'max_volumes_per_node reported by NodeGetInfo',
      default: 128,
      min: 1,
    }),
    'default-fs-type': Flags.option({
      description: 'filesystem when a mount capability names none',
      options: FS_TYPES,
      default: 'ext4' as const,
    })(),
    'path-timeout': durationFlag({
      description:
        "how long I/O waits for a lost path to come back before it fails (as Linux NVMe-oF's ctrl_loss_tmo)",
      default: DEFAULT_PATH_TIMEOUT_MS,
      positive: true,
    }),
    'driver-name': Flags.string({
      description: 'CSI driver name reported by GetPluginInfo',
      default: BLOCK_DRIVER_NAME,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DaemonCsiNode);
    try {
      socketPathOf(flags.endpoint);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const roots = targetRoots(flags.root);
    const stateDir = flags['state-dir'] ?? defaultCsiNodeStateDir();
    if (!isAbsolute(stateDir)) throw new UsageError(`--state-dir '${stateDir}' is not absolute`);
    if (flags.rest && !/^https?:\/\/[^\s/]+\/?$/.test(flags.rest))
      throw new UsageError(`--rest '${flags.rest}' is not an http(s) URL such as http://127.0.0.1:8081`);
    const metrics = await serveMetrics(flags['metrics-address'], 'csi-node');
    const daemon = await start({
      endpoint: flags.endpoint,
      nodeId: flags['node-id'] ?? hostname(),
      stateDir,
      roots,
      restUrl: flags.rest?.replace(/\/$/, ''),
      fsListen: hostPortFlag('fs-listen', flags['fs-listen'], '127.0.0.1:0'),
      attacher: flags.attacher,
      maxVolumes: flags['max-volumes'],
      defaultFsType: flags['default-fs-type'],
      pathTimeoutMs: flags['path-timeout'],
      driverName: flags['driver-name'],
      logLevel: this.globals.logLevel === 'warn' ? 'info' : this.globals.logLevel,
    });
    this.logToStderr(
      `csi-node listening on ${daemon.socketPath} (NodeFs ${daemon.fsEndpoint}, attacher ${daemon.attacher}, ${daemon.adopted.volumes} staged volumes found)`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    await daemon.stop();
    await metrics?.close();
  }
}
