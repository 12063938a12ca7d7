import { Flags } from '@oclif/core';
import { CORE_DEFAULTS, start } from '../../daemons/core/index.js';
import { durationFlag, hostPortFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { defaultCoreInstanceName } from '../../lib/core-lease.js';
import { createLogger } from '../../lib/logger.js';
import { metricsAddressFlag, serveMetrics } from '../../lib/metrics/flag.js';

/** Mayastor's exit code when another core replaced this one (docs/mayastor-compat.md §4.4). */
const EXIT_LEASE_LOST = 128;

export default class DaemonCore extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    'Run the core agent: REST API v0, single-writer store lease, scheduler, crash-safe volume operations and reconcilers';

  static override examples = [
    '<%= config.bin %> daemon core --rest 127.0.0.1:8081',
    '<%= config.bin %> daemon core --store etcd://127.0.0.1:2379 --rest 127.0.0.1:0 --node-deadline 30s --cache-period 2s',
  ];

  static override flags = {
    rest: Flags.string({
      description: 'HOST:PORT of the REST API (binds loopback unless told otherwise)',
      default: '127.0.0.1:8081',
      env: 'STORCTL_CORE_REST',
    }),
    'lease-ttl': Flags.integer({
      description: 'single-writer lease TTL in seconds',
      default: CORE_DEFAULTS.leaseTtlSeconds,
      min: 1,
    }),
    'instance-name': Flags.string({
      description: 'name recorded in StoreLeaseOwner (default: host name and pid)',
    }),
    'reconcile-period': durationFlag({
      description: 'reconcile loop period while work is pending',
      default: CORE_DEFAULTS.reconcilePeriodMs,
    }),
    'reconcile-idle-period': durationFlag({
      description: 'reconcile loop period when idle',
      default: CORE_DEFAULTS.reconcileIdlePeriodMs,
    }),
    'cache-period': durationFlag({
      description: 'how often io-engines are polled for pools, replicas and nexuses',
      default: CORE_DEFAULTS.cachePeriodMs,
    }),
    'gc-period': durationFlag({
      description: 'how often orphaned replicas and nexuses are collected',
      default: CORE_DEFAULTS.gcPeriodMs,
    }),
    'replica-gc-grace': durationFlag({
      description: 'grace period before an ownerless replica is destroyed',
      default: CORE_DEFAULTS.replicaGcGraceMs,
    }),
    'node-deadline': durationFlag({
      description:
        'a replica on a node offline this long is replaced (self-heal); one whose nexus child is faulted is waited for --faulted-child-wait-period instead, unless that is 0',
      default: CORE_DEFAULTS.nodeOfflineDeadlineMs,
    }),
    'request-timeout': durationFlag({
      description: 'gRPC request timeout towards io-engines',
      default: CORE_DEFAULTS.requestTimeoutMs,
    }),
    'faulted-child-wait-period': durationFlag({
      description:
        "how long a faulted nexus child is waited for: a replica back within it (its io-engine restarted, its connection dropped) is added back and rebuilt from the nexus's log of missed writes (partial rebuild); after it, or if the replica is gone, it is replaced by a new replica; 0 replaces it at once",
      default: CORE_DEFAULTS.faultedChildWaitMs,
    }),
    'disable-partial-rebuild': Flags.boolean({
      description:
        'never wait for a faulted nexus child to come back: replace it with a new replica (full rebuild) at once, as --faulted-child-wait-period 0',
      default: false,
    }),
    'pool-commitment': Flags.integer({
      description: 'thin overcommit limit, percent of pool capacity',
      default: CORE_DEFAULTS.poolCommitmentPercent,
      min: 100,
    }),
    'volume-commitment': Flags.integer({
      description: 'free space a thin replica needs, percent of its size',
      default: CORE_DEFAULTS.volumeCommitmentPercent,
      min: 0,
      max: 100,
    }),
    'metrics-address': metricsAddressFlag(),
    'events-kept': Flags.integer({
      description: 'size of the bounded events log in the store',
      default: CORE_DEFAULTS.eventsKept,
      min: 10,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DaemonCore);
    const rest = hostPortFlag('rest', flags.rest, '127.0.0.1:8081');
    const metrics = await serveMetrics(flags['metrics-address'], 'core');
    const log = createLogger('core', this.globals.logLevel === 'warn' ? 'info' : this.globals.logLevel);
    const abort = new AbortController();
    const onSignal = () => abort.abort();
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    const core = await start(
      {
        storeUrl: this.globals.storeUrl,
        storeTls: this.globals.tls,
        clusterId: this.globals.keySpace.clusterId,
        namespace: this.globals.keySpace.namespace,
        restHost: rest.host,
        restPort: rest.port,
        leaseTtlSeconds: flags['lease-ttl'],
        instanceName: flags['instance-name'] ?? defaultCoreInstanceName(process.pid),
        reconcilePeriodMs: flags['reconcile-period'],
        reconcileIdlePeriodMs: flags['reconcile-idle-period'],
        cachePeriodMs: flags['cache-period'],
        gcPeriodMs: flags['gc-period'],
        replicaGcGraceMs: flags['replica-gc-grace'],
        nodeOfflineDeadlineMs: flags['node-deadline'],
        requestTimeoutMs: flags['request-timeout'],
        faultedChildWaitMs: flags['faulted-child-wait-period'],
        disablePartialRebuild: flags['disable-partial-rebuild'],
        poolCommitmentPercent: flags['pool-commitment'],
        volumeCommitmentPercent: flags['volume-commitment'],
        eventsKept: flags['events-kept'],
      },
      { log, signal: abort.signal },
    ).catch((err) => {
      if (abort.signal.aborted) this.exit(0);
      throw err;
    });
    process.stdout.write(
      `${JSON.stringify({ level: 'info', time: new Date().toISOString(), component: 'core', msg: 'core ready', url: core.url, timings: core.timings })}\n`,
    );
    const outcome = await Promise.race([
      new Promise<'signal'>((resolve) => {
        if (abort.signal.aborted) resolve('signal');
        abort.signal.addEventListener('abort', () => resolve('signal'), { once: true });
      }),
      core.leaseLost.then(() => 'lost' as const),
    ]);
    await core.stop().catch((err) => log.error({ err: String(err) }, 'stop failed'));
    await metrics?.close();
    if (outcome === 'lost') {
      this.logToStderr(
        'Error: core lost its store lease (another core took over or the store expired it); exiting',
      );
      this.exit(EXIT_LEASE_LOST);
    }
  }
}
