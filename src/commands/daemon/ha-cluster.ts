import { Flags } from '@oclif/core';
import { start } from '../../daemons/ha-cluster/index.js';
import { SWITCHOVER_DEFAULTS } from '../../daemons/ha-cluster/switchover.js';
import { durationFlag, hostPortFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { ExitCode } from '../../lib/errors.js';
import { metricsAddressFlag, serveMetrics } from '../../lib/metrics/flag.js';
import { resolveRestUrl } from '../../lib/rest/endpoint.js';
import { openStore } from '../../lib/store/open.js';

/** As core does when it loses its lease: a supervisor restarts it (docs/mayastor-compat.md §4.4). */
const EXIT_LEASE_LOST = 128;

export default class DaemonHaCluster extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    `HA cluster agent: takes failed-path reports from the ha-node agents and operator switchover requests, and moves each affected volume's target to a healthy node

Each switchover is a SwitchOver/<volume> record in the store that advances Init → RepublishVolume → ReplacePath → DeleteTarget → Successful (or Errored with the reason); every stage is recorded before it is carried out, so a restarted agent resumes each record and finishes it exactly once. Several instances may run: one is active (store election), the others answer UNAVAILABLE until the active one is gone.`;

  static override examples = [
    '<%= config.bin %> daemon ha-cluster --rest http://127.0.0.1:8081 --grpc 127.0.0.1:11500',
    '<%= config.bin %> daemon ha-cluster --store etcd://127.0.0.1:2379 --grpc 0.0.0.0:11500 --retry-delay 2s --max-retries 30',
  ];

  static override flags = {
    'metrics-address': metricsAddressFlag(),
    rest: Flags.string({
      description: 'core REST URL (default: the cluster `storctl up` started, else http://127.0.0.1:8081)',
      env: 'STORCTL_REST',
    }),
    grpc: Flags.string({
      description:
        'HOST:PORT the HaCluster service listens on (loopback unless told otherwise; port 0 picks one)',
      default: '127.0.0.1:11500',
      env: 'STORCTL_HA_CLUSTER_GRPC',
    }),
    workers: Flags.integer({
      description: 'switchover stages carried out at once',
      default: SWITCHOVER_DEFAULTS.workers,
      min: 1,
    }),
    'retry-delay': durationFlag({
      description: 'wait after a failed stage before trying it again',
      default: SWITCHOVER_DEFAULTS.retryDelayMs,
      positive: true,
    }),
    'max-retries': Flags.integer({
      description: 'failed attempts of one stage after which the switchover ends Errored',
      default: SWITCHOVER_DEFAULTS.maxRetries,
      min: 0,
    }),
    'lease-ttl': Flags.integer({
      description:
        'leadership lease TTL in seconds: a standby takes over this long after the active agent died',
      default: 5,
      min: 1,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DaemonHaCluster);
    const listen = hostPortFlag('grpc', flags.grpc, '127.0.0.1:11500');
    const store = await openStore(this.globals.storeUrl, { tls: this.globals.tls });
    const metrics = await serveMetrics(flags['metrics-address'], 'ha-cluster');
    const daemon = await start({
      restUrl: resolveRestUrl(flags.rest),
      listen,
      store,
      keySpace: this.globals.keySpace,
      leaseTtlSeconds: flags['lease-ttl'],
      workers: flags.workers,
      retryDelayMs: flags['retry-delay'],
      maxRetries: flags['max-retries'],
      logLevel: this.globals.logLevel === 'warn' ? 'info' : this.globals.logLevel,
    });
    this.log(`ha-cluster listening on ${daemon.endpoint}`);
    let failure = '';
    const outcome = await new Promise<'signal' | 'lost' | 'failed'>((resolve) => {
      process.once('SIGTERM', () => resolve('signal'));
      process.once('SIGINT', () => resolve('signal'));
      void daemon.lost.then(() => resolve('lost'));
      daemon.elected.catch((err: Error) => {
        failure = err.message;
        resolve('failed');
      });
    });
    await daemon.stop();
    await metrics?.close();
    await store.close();
    if (outcome === 'failed') {
      this.logToStderr(`Error: ha-cluster could not take part in its election: ${failure}`);
      this.exit(ExitCode.storeUnavailable);
    }
    if (outcome === 'lost') {
      this.logToStderr('Error: ha-cluster lost its leadership lease (the store expired it); exiting');
      this.exit(EXIT_LEASE_LOST);
    }
  }
}
