import client from 'prom-client';

/**
 * The one metrics registry of this process. Every daemon serves it at `/metrics`; the metrics
 * themselves are defined in `catalog.ts` (and `switchover.ts`, `nbd.ts`, `pools.ts`), which the
 * README's table lists. Only daemons import this: CLI commands never load prom-client.
 */
export const registry = new client.Registry();

// Process CPU, memory, event-loop lag and GC, as prom-client names them (process_*, nodejs_*).
client.collectDefaultMetrics({ register: registry });

/** Latency buckets in seconds: 0.5 ms to 10 s, for REST, gRPC and store calls alike. */
export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

export { client };
