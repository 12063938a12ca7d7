import type { NbdServer } from '../nbd/server.js';
import { NBD_LATENCY_BUCKETS } from '../nbd/stats.js';
import { registry } from './registry.js';

type Value = { value: number; labels: Record<string, string | number>; metricName?: string };

/**
 * NBD metrics of an io-engine, per target (export name: a nexus or replica uuid), read from the
 * NBD server's plain counters at scrape time, so the data path never touches prom-client.
 */
export function registerNbdMetrics(nbd: NbdServer): void {
  const servers = nbdServers;
  servers.add(nbd);
  if (registered) return;
  registered = true;
  const each = (fn: (target: string, s: ReturnType<NbdServer['stats']['get']> & object) => void) => {
    for (const server of servers) for (const [target, s] of server.stats) fn(target, s);
  };
  const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => Value[]) =>
    registry.registerMetric({
      name,
      help,
      type,
      get: async () => ({ name, help, type, values: values(), aggregator: 'sum' }),
    } as never);
  metric(
    'storctl_nbd_bytes_total',
    'bytes read and written through NBD, per target and direction',
    'counter',
    () => {
      const out: Value[] = [];
      each((target, s) => {
        out.push({ value: s.readBytes, labels: { target, direction: 'read' } });
        out.push({ value: s.writeBytes, labels: { target, direction: 'write' } });
      });
      return out;
    },
  );
  metric(
    'storctl_nbd_requests_total',
    'NBD requests per target and type (read, write, other: flush, trim, write-zeroes; error: failed)',
    'counter',
    () => {
      const out: Value[] = [];
      each((target, s) => {
        out.push({ value: s.reads, labels: { target, type: 'read' } });
        out.push({ value: s.writes, labels: { target, type: 'write' } });
        out.push({ value: s.others, labels: { target, type: 'other' } });
        out.push({ value: s.errors, labels: { target, type: 'error' } });
      });
      return out;
    },
  );
  metric('storctl_nbd_request_duration_seconds', 'NBD request latency per target', 'histogram', () => {
    const name = 'storctl_nbd_request_duration_seconds';
    const out: Value[] = [];
    each((target, s) => {
      let cumulative = 0;
      for (let i = 0; i < s.buckets.length; i++) {
        cumulative += s.buckets[i];
        const le = i < NBD_LATENCY_BUCKETS.length ? NBD_LATENCY_BUCKETS[i] : '+Inf';
        out.push({ metricName: `${name}_bucket`, value: cumulative, labels: { target, le } });
      }
      out.push({ metricName: `${name}_sum`, value: s.latencySum, labels: { target } });
      out.push({ metricName: `${name}_count`, value: cumulative, labels: { target } });
    });
    return out;
  });
}

const nbdServers = new Set<NbdServer>();
let registered = false;

/** Forget a stopped server's targets. */
export function unregisterNbdMetrics(nbd: NbdServer): void {
  nbdServers.delete(nbd);
}
