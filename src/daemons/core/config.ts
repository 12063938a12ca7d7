/** Everything `storctl daemon core` is configured with; durations in ms so tests run them fast. */
export interface CoreConfig {
  storeUrl: string;
  /** etcd TLS files (CA, client certificate, key), when the store is a TLS etcd. */
  storeTls?: { ca?: string; cert?: string; key?: string };
  clusterId: string;
  namespace: string;
  /** REST listen address. */
  restHost: string;
  restPort: number;
  /** Single-writer lease TTL (Mayastor --store-lease-ttl, 30 s). */
  leaseTtlSeconds: number;
  instanceName: string;
  /** Reconcile loop period while work is pending (--reconcile-period, 10 s). */
  reconcilePeriodMs: number;
  /** Loop period when idle (--reconcile-idle-period, 30 s). */
  reconcileIdlePeriodMs: number;
  /** Poll every online io-engine for pools/replicas/nexuses (--cache-period, 30 s). */
  cachePeriodMs: number;
  /** Garbage collection of orphaned replicas/nexuses runs every this often. */
  gcPeriodMs: number;
  /** A managed replica without owner is destroyed only after this grace period. */
  replicaGcGraceMs: number;
  /** A replica on a node offline this long is replaced (self-heal). */
  nodeOfflineDeadlineMs: number;
  /** gRPC request timeout towards io-engines. */
  requestTimeoutMs: number;
  /** Thin provisioning limits (docs/mayastor-compat.md §4.5). */
  poolCommitmentPercent: number;
  volumeCommitmentPercent: number;
  /** Events kept in the store's bounded log. */
  eventsKept: number;
}

export const CORE_DEFAULTS = {
  restHost: '127.0.0.1',
  restPort: 8081,
  leaseTtlSeconds: 30,
  reconcilePeriodMs: 10_000,
  reconcileIdlePeriodMs: 30_000,
  cachePeriodMs: 30_000,
  gcPeriodMs: 50_000,
  replicaGcGraceMs: 60_000,
  nodeOfflineDeadlineMs: 60_000,
  requestTimeoutMs: 15_000,
  poolCommitmentPercent: 250,
  volumeCommitmentPercent: 40,
  eventsKept: 1000,
} satisfies Partial<CoreConfig>;
