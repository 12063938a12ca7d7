import { client, LATENCY_BUCKETS, registry } from './registry.js';

/*
 * Every storctl metric but the switchover ones (switchover.ts), the per-target NBD ones (nbd.ts)
 * and the pools' (pools.ts). Each is registered once per process; a daemon only moves the ones of
 * its work, the others stay at zero (or, labelled, absent).
 */

const registers = [registry];

export const restRequests = new client.Counter({
  name: 'storctl_rest_requests_total',
  help: 'core REST API requests, by method, route pattern (e.g. /volumes/:volume_id) and HTTP status',
  labelNames: ['method', 'route', 'status'] as const,
  registers,
});

export const restDuration = new client.Histogram({
  name: 'storctl_rest_request_duration_seconds',
  help: 'core REST API request latency, by method and route pattern',
  labelNames: ['method', 'route'] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});

export const grpcRequests = new client.Counter({
  name: 'storctl_grpc_requests_total',
  help: 'gRPC requests served, by service (storctl.io_engine.v1.IoEngine, csi.v1.Node, …), method and status code name',
  labelNames: ['service', 'method', 'code'] as const,
  registers,
});

export const grpcDuration = new client.Histogram({
  name: 'storctl_grpc_request_duration_seconds',
  help: 'gRPC request latency, by service and method (CSI RPCs are the csi.v1.* services)',
  labelNames: ['service', 'method'] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});

export const reconcileDuration = new client.Histogram({
  name: 'storctl_reconcile_duration_seconds',
  help: 'core\'s reconcile loop: one pass (reconciler="pass") and each reconciler in it',
  labelNames: ['reconciler'] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});

export const storeTxnDuration = new client.Histogram({
  name: 'storctl_store_txn_duration_seconds',
  help: 'store write latency (each a transaction), by backend (etcd, embedded), op (txn, put, delete) and outcome (succeeded, failed compare, full: refused by a full store, error)',
  labelNames: ['backend', 'op', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});

export const rebuilds = new client.Counter({
  name: 'storctl_rebuilds_total',
  help: 'child rebuilds finished on this io-engine, by result (completed, stopped, failed)',
  labelNames: ['result'] as const,
  registers,
});

export const rebuildsActive = new client.Gauge({
  name: 'storctl_rebuilds_active',
  help: 'child rebuilds running on this io-engine',
  registers,
});

export const rebuildBytes = new client.Counter({
  name: 'storctl_rebuild_bytes_total',
  help: 'bytes of data written to rebuilding children on this io-engine (zero stretches are zeroed, not counted)',
  registers,
});

export const mountOperations = new client.Counter({
  name: 'storctl_mount_operations_total',
  help: 'S3 mount operations of the mounter (publish, unpublish), by result (ok, failed)',
  labelNames: ['operation', 'result'] as const,
  registers,
});

type StateKind = 'volumes' | 'replicas' | 'nexuses';
const stateSources: Record<StateKind, Set<() => Map<string, number>>> = {
  volumes: new Set(),
  replicas: new Set(),
  nexuses: new Set(),
};

/** Resource counts by state, summed over the sources (core's registry) at each scrape. */
function stateGauge(kind: StateKind, help: string) {
  return new client.Gauge({
    name: `storctl_${kind}`,
    help,
    labelNames: ['state'] as const,
    registers,
    collect() {
      this.reset();
      const sum = new Map<string, number>();
      for (const source of stateSources[kind])
        for (const [state, n] of source()) sum.set(state, (sum.get(state) ?? 0) + n);
      for (const [state, n] of sum) this.set({ state }, n);
    },
  });
}

export const volumesByState = stateGauge(
  'volumes',
  'volumes by status (Online, Degraded, Faulted, Unknown; Creating, Deleting)',
);
export const replicasByState = stateGauge(
  'replicas',
  'replica specs by status (online, …; Creating, Deleting)',
);
export const nexusesByState = stateGauge(
  'nexuses',
  'nexus specs by status (Online, Shutdown, …; Creating, Deleting)',
);

/** Count resources of a kind at each scrape; returns the function that stops it. */
export function addStateSource(kind: StateKind, source: () => Map<string, number>): () => void {
  stateSources[kind].add(source);
  return () => stateSources[kind].delete(source);
}

/** Seconds since `start` (a `performance.now()` reading). */
export const since = (start: number) => (performance.now() - start) / 1000;
