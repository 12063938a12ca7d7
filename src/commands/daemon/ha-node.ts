import { Flags } from '@oclif/core';
import { HA_NODE_DEFAULTS, start } from '../../daemons/ha-node/index.js';
import { durationFlag, hostPortFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { UsageError } from '../../lib/errors.js';
import { metricsAddressFlag, serveMetrics } from '../../lib/metrics/flag.js';

export default class DaemonHaNode extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    `HA node agent: probes the path of every volume the csi-node staged on this node, reports failed ones to ha-cluster, and re-points a path to the new target when ha-cluster asks (ReplacePath)

A path is probed with one read through the volume's path proxy; it is Failed after --fail-after consecutive probes that did not answer within --probe-timeout. While a path is down the proxy holds the application's I/O (csi-node --path-timeout) and replays it on the new target, so the application sees a pause, not an error.`;

  static override examples = [
    '<%= config.bin %> daemon ha-node --node node-1 --cluster 127.0.0.1:11500 --csi-node 127.0.0.1:11600',
    '<%= config.bin %> daemon ha-node --node node-1 --cluster 10.0.0.5:11500,10.0.0.6:11500 --csi-node 127.0.0.1:11600 --interval 250ms',
  ];

  static override flags = {
    'metrics-address': metricsAddressFlag(),
    node: Flags.string({
      description: 'this node (as the csi-node names it)',
      required: true,
      env: 'STORCTL_NODE_ID',
    }),
    cluster: Flags.string({
      description:
        'ha-cluster HOST:PORT; several, comma-separated, are tried in order (the active one answers)',
      required: true,
      env: 'STORCTL_HA_CLUSTER',
    }),
    'csi-node': Flags.string({
      description: "HOST:PORT of the csi-node's NodeFs/NodePaths service on this node",
      required: true,
      env: 'STORCTL_CSI_NODE_FS',
    }),
    grpc: Flags.string({
      description: 'HOST:PORT the HaNode service listens on (port 0 picks one)',
      default: '127.0.0.1:11600',
    }),
    interval: durationFlag({
      description: 'how often every path is probed',
      default: HA_NODE_DEFAULTS.intervalMs,
      positive: true,
    }),
    'probe-timeout': durationFlag({
      description: 'a probe unanswered this long counts as a failure',
      default: HA_NODE_DEFAULTS.probeTimeoutMs,
      positive: true,
    }),
    'fail-after': Flags.integer({
      description: 'consecutive failed probes that make a path Failed (reported)',
      default: HA_NODE_DEFAULTS.failAfter,
      min: 1,
    }),
    'retransmit-period': durationFlag({
      description: 'how often an unacknowledged report is sent again',
      default: HA_NODE_DEFAULTS.retransmitMs,
      positive: true,
    }),
    'report-again': durationFlag({
      description:
        'how often a path that stays Failed is reported again: its switchover may have ended Errored (the volume was not published, say), and once it is published again the path is re-pointed',
      default: HA_NODE_DEFAULTS.reportAgainMs,
      positive: true,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DaemonHaNode);
    const clusters = flags.cluster
      .split(',')
      .map((c) => c.trim())
      .filter(Boolean);
    if (clusters.length === 0) throw new UsageError('--cluster needs at least one HOST:PORT');
    for (const c of clusters) hostPortFlag('cluster', c, '127.0.0.1:11500');
    hostPortFlag('csi-node', flags['csi-node'], '127.0.0.1:11600');
    const metrics = await serveMetrics(flags['metrics-address'], 'ha-node');
    const daemon = await start({
      nodeId: flags.node,
      clusters,
      csiNode: flags['csi-node'],
      listen: hostPortFlag('grpc', flags.grpc, '127.0.0.1:11600'),
      intervalMs: flags.interval,
      probeTimeoutMs: flags['probe-timeout'],
      failAfter: flags['fail-after'],
      aggregateMs: HA_NODE_DEFAULTS.aggregateMs,
      retransmitMs: flags['retransmit-period'],
      reportAgainMs: flags['report-again'],
      registerMs: HA_NODE_DEFAULTS.registerMs,
      logLevel: this.globals.logLevel === 'warn' ? 'info' : this.globals.logLevel,
    });
    this.log(`ha-node listening on ${daemon.endpoint}`);
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
    await daemon.stop();
    await metrics?.close();
  }
}
