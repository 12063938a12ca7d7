import { Flags } from '@oclif/core';
import { CSI_CONTROLLER_DEFAULTS, DRIVER_NAME_RE, start } from '../../daemons/csi-controller/index.js';
import { durationFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { BLOCK_DRIVER_NAME } from '../../lib/csi/plugin.js';
import { socketPathOf } from '../../lib/csi/socket.js';
import { UsageError } from '../../lib/errors.js';
import { metricsAddressFlag, serveMetrics } from '../../lib/metrics/flag.js';
import { resolveKubeAccess } from '../../lib/orphans/kube/config.js';
import { sizeArg } from '../../lib/rest/cli.js';
import { resolveRestUrl } from '../../lib/rest/endpoint.js';

export default class DaemonCsiController extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    `CSI controller of replicated block volumes: serves CSI Identity + Controller on a unix socket and turns every call into core REST requests

Volumes: CreateVolume (StorageClass parameters repl, thin, fsType, protocol=nbd, maxSnapshots, quiesceFs and the topology keys; clones from a snapshot source), DeleteVolume, ControllerPublishVolume (publish_context.uri is the NBD target), ControllerUnpublishVolume, ValidateVolumeCapabilities, ListVolumes, ControllerGetVolume, GetCapacity, ControllerExpandVolume (online). Snapshots: CreateSnapshot (quiesceFs=freeze freezes the filesystem through the csi-node that staged the volume), DeleteSnapshot, ListSnapshots. Names pvc-<uuid> and snapshot-<uuid> keep their uuid; other names map to a stable UUID v5.`;

  static override examples = [
    '<%= config.bin %> daemon csi-controller --endpoint unix:///var/lib/kubelet/plugins/io.storctl.csi-block/controller.sock --rest http://127.0.0.1:8081',
    '<%= config.bin %> daemon csi-controller --endpoint unix:///tmp/csi/controller.sock --driver-name io.example.csi-block --default-volume-size 256MiB --freeze-timeout 5s',
  ];

  static override flags = {
    'metrics-address': metricsAddressFlag(),
    rest: Flags.string({
      description: 'core REST URL (default: the cluster `storctl up` started, else http://127.0.0.1:8081)',
      env: 'STORCTL_REST',
    }),
    endpoint: Flags.string({
      description: 'CSI socket, unix:///path/csi-controller.sock',
      required: true,
      env: 'STORCTL_CSI_CONTROLLER_ENDPOINT',
    }),
    'driver-name': Flags.string({
      description: 'driver name GetPluginInfo reports (a reverse-domain name)',
      default: BLOCK_DRIVER_NAME,
      env: 'STORCTL_CSI_DRIVER_NAME',
    }),
    'rest-timeout': durationFlag({
      description: 'timeout of each request to core',
      default: CSI_CONTROLLER_DEFAULTS.restTimeoutMs,
      positive: true,
    }),
    'default-volume-size': Flags.string({
      description: 'size of a volume whose capacity_range is empty (default 1GiB)',
    }),
    'freeze-timeout': durationFlag({
      description: 'deadline of a filesystem freeze on a csi-node; the node thaws by itself after it',
      default: CSI_CONTROLLER_DEFAULTS.freezeTimeoutMs,
      positive: true,
    }),
    'orphan-gc': Flags.option({
      description:
        'sweep volumes with neither PV nor PVC: report them (log), or also delete them through core; needs a Kubernetes API',
      options: ['off', 'report', 'delete'] as const,
      default: 'off',
    })(),
    'orphan-gc-period': durationFlag({
      description: 'how often the sweep runs',
      default: 60_000,
      positive: true,
    }),
    'orphan-gc-grace': durationFlag({
      description: 'how long a volume stays without claim before it is reported (checked again then)',
      default: 60_000,
      positive: true,
    }),
    kubeconfig: Flags.string({
      description:
        'kubeconfig of the API server to read PVs and PVCs from (default: the in-cluster service account)',
      env: 'KUBECONFIG',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DaemonCsiController);
    try {
      socketPathOf(flags.endpoint);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    if (!DRIVER_NAME_RE.test(flags['driver-name']))
      throw new UsageError(
        `--driver-name '${flags['driver-name']}' is not a domain name (lowercase letters, digits, '-' and '.', at most 63 characters)`,
      );
    let orphanGc: Parameters<typeof start>[0]['orphanGc'];
    if (flags['orphan-gc'] !== 'off') {
      const kube = await resolveKubeAccess(flags.kubeconfig);
      if (!kube)
        throw new UsageError(
          '--orphan-gc needs a Kubernetes API: pass --kubeconfig, or run in a pod with a service account',
        );
      orphanGc = {
        mode: flags['orphan-gc'],
        kube,
        periodMs: flags['orphan-gc-period'],
        graceMs: flags['orphan-gc-grace'],
      };
    }
    const metrics = await serveMetrics(flags['metrics-address'], 'csi-controller');
    const daemon = await start({
      orphanGc,
      endpoint: flags.endpoint,
      restUrl: resolveRestUrl(flags.rest),
      driverName: flags['driver-name'],
      restTimeoutMs: flags['rest-timeout'],
      freezeTimeoutMs: flags['freeze-timeout'],
      defaultVolumeSize:
        flags['default-volume-size'] === undefined
          ? CSI_CONTROLLER_DEFAULTS.defaultVolumeSize
          : sizeArg('default-volume-size', flags['default-volume-size']),
      logLevel: this.globals.logLevel === 'warn' ? 'info' : this.globals.logLevel,
    });
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await daemon.stop();
    await metrics?.close();
  }
}
