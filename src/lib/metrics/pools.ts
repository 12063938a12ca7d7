import { client, registry } from './registry.js';

/*
 * Pool capacity and usage of an io-engine, under the names Mayastor's pool exporter gives them
 * (disk_pool_*, labels node and name), so alerts written for Mayastor pools work unchanged: on a
 * thin pool, used creeping toward total is the alert that matters (once it is full, thin writes
 * that need new space fail with ENOSPC, which storctl_pool_writes_refused_total counts).
 */

/** One pool's figures, read at each scrape. */
export interface PoolFigures {
  node: string;
  name: string;
  capacity: number;
  used: number;
  committed: number;
  status: 'Unknown' | 'Online' | 'Degraded' | 'Faulted';
  /** Thin writes refused with ENOSPC since the io-engine started. */
  refusedWrites: number;
}

const STATUS_CODE = { Unknown: 0, Online: 1, Degraded: 2, Faulted: 3 } as const;

const sources = new Set<() => Promise<PoolFigures[]>>();

function poolGauge(name: string, help: string, value: (p: PoolFigures) => number) {
  return new client.Gauge({
    name,
    help,
    labelNames: ['node', 'name'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const source of sources)
        for (const p of await source()) this.set({ node: p.node, name: p.name }, value(p));
    },
  });
}

poolGauge('disk_pool_total_size_bytes', 'capacity of the pool in bytes', (p) => p.capacity);
poolGauge(
  'disk_pool_used_size_bytes',
  'bytes the pool holds on disk (replicas and snapshots; thin ones count what they allocated)',
  (p) => p.used,
);
poolGauge(
  'disk_pool_committed_size_bytes',
  'bytes promised to the replicas and snapshots of the pool (their full sizes, thin ones too)',
  (p) => p.committed,
);
poolGauge(
  'disk_pool_status',
  'pool status: 0 Unknown, 1 Online, 2 Degraded, 3 Faulted',
  (p) => STATUS_CODE[p.status],
);

new client.Counter({
  name: 'storctl_pool_writes_refused_total',
  help: 'thin writes the pool refused with ENOSPC: they needed space past its capacity',
  labelNames: ['node', 'name'] as const,
  registers: [registry],
  async collect() {
    // The io-engine counts; a scrape reports its running totals.
    this.reset();
    for (const source of sources)
      for (const p of await source()) this.inc({ node: p.node, name: p.name }, p.refusedWrites);
  },
});

/** Report an io-engine's pools at each scrape; returns the function that stops it. */
export function addPoolSource(source: () => Promise<PoolFigures[]>): () => void {
  sources.add(source);
  return () => sources.delete(source);
}
