import { Flags } from '@oclif/core';
import { start } from '../../daemons/io-engine/index.js';
import { hostPortFlag } from '../../lib/cli-args.js';
import { StorctlCommand } from '../../lib/command.js';
import { UsageError } from '../../lib/errors.js';
import { createLogger } from '../../lib/logger.js';
import { metricsAddressFlag, serveMetrics } from '../../lib/metrics/flag.js';
import { meterStore } from '../../lib/metrics/store.js';
import { openStore } from '../../lib/store/open.js';

export default class DaemonIoEngine extends StorctlCommand {
  static override stdoutIsOutput = false;

  static override description =
    'Run one io-engine (storage node): pools, replicas, nexuses and NBD targets, controlled over gRPC';

  static override examples = [
    '<%= config.bin %> daemon io-engine --node node-1 --pool-dir /var/lib/storctl/pools --grpc 127.0.0.1:10124 --nbd 127.0.0.1:10809',
  ];

  static override flags = {
    'metrics-address': metricsAddressFlag(),
    node: Flags.string({
      description: 'node id this io-engine registers as',
      required: true,
      env: 'STORCTL_NODE',
    }),
    'pool-dir': Flags.string({
      description: 'parent directory of pools created without an explicit disk',
      required: true,
    }),
    grpc: Flags.string({ description: 'HOST:PORT of the gRPC control API', default: '127.0.0.1:10124' }),
    nbd: Flags.string({ description: 'HOST:PORT of the NBD server (default: the gRPC host, port 10809)' }),
    'heartbeat-ttl': Flags.integer({
      description: 'liveness lease TTL in seconds (the heartbeat deadline)',
      default: 10,
      min: 1,
    }),
    'nexus-info-retries': Flags.integer({
      description: 'NexusInfo write retries before a nexus shuts itself down',
      default: 10,
      min: 0,
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(DaemonIoEngine);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,126}$/.test(flags.node))
      throw new UsageError(`--node '${flags.node}' is not a valid node id`);
    const grpc = hostPortFlag('grpc', flags.grpc, '127.0.0.1:10124');
    const nbd = hostPortFlag('nbd', flags.nbd ?? `${grpc.host}:10809`, '127.0.0.1:10124');
    const logger = createLogger('io-engine', this.globals.logLevel);
    const metrics = await serveMetrics(flags['metrics-address'], 'io-engine');
    const store = meterStore(await openStore(this.globals.storeUrl, { tls: this.globals.tls }));
    let handle: Awaited<ReturnType<typeof start>>;
    try {
      handle = await start({
        nodeId: flags.node,
        poolDir: flags['pool-dir'],
        grpc,
        nbd,
        store,
        keySpace: this.globals.keySpace,
        heartbeatTtlSeconds: flags['heartbeat-ttl'],
        nexusInfoRetries: flags['nexus-info-retries'],
        version: this.config.version,
        logger,
      });
    } catch (err) {
      await store.close();
      throw err;
    }
    process.stdout.write(
      `${JSON.stringify({ level: 'info', time: new Date().toISOString(), component: 'io-engine', msg: 'io-engine ready', node: flags.node, grpcEndpoint: handle.grpcEndpoint, nbdEndpoint: handle.nbdEndpoint, store: store.endpoint })}\n`,
    );
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        logger.info({ signal }, 'stopping');
        handle
          .stop()
          .catch((err) => {
            // Every part is stopped anyway (the process exits); the code says it was not clean.
            logger.error({ err: String(err) }, 'stop failed');
            process.exitCode = 1;
          })
          .finally(() =>
            store
              .close()
              .then(() => metrics?.close())
              .finally(resolve),
          );
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
  }
}
