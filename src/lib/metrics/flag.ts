import { Flags } from '@oclif/core';
import { hostPortFlag } from '../cli-args.js';
import type { MetricsAddress, MetricsServer } from './server.js';

/** Default: loopback, a free port (several daemons share a machine under `storctl up`). */
export const DEFAULT_METRICS_ADDRESS = '127.0.0.1:0';

/**
 * `--metrics-address HOST:PORT|off`, the same on every daemon. A daemon adds it with
 * `'metrics-address': metricsAddressFlag()` and starts the endpoint with `serveMetrics`.
 */
export const metricsAddressFlag = () =>
  Flags.custom<MetricsAddress | null>({
    description: `where to serve Prometheus metrics at /metrics: HOST:PORT (port 0 picks a free one; the URL is logged as "metrics listening"), or off (default ${DEFAULT_METRICS_ADDRESS})`,
    env: 'STORCTL_METRICS_ADDRESS',
    default: { host: '127.0.0.1', port: 0 },
    // Said in the description: a computed default would show as an object, and a defaultHelp
    // function makes oclif load the command's code for every --help.
    noCacheDefault: true,
    parse: async (input) =>
      input === 'off' ? null : hostPortFlag('metrics-address', input, '127.0.0.1:9464'),
  })();

/**
 * Start the daemon's metrics endpoint as the flag says (null: off). The metrics code is loaded only
 * here, so commands that are not daemons never load prom-client.
 */
export async function serveMetrics(
  address: MetricsAddress | null,
  component: string,
): Promise<MetricsServer | null> {
  if (!address) return null;
  const { startMetricsServer } = await import('./server.js');
  return startMetricsServer(address, component);
}
