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
  /** A replica on a node offline this long is replaced (self-heal); a faulted child's: faultedChildWaitMs. */
  nodeOfflineDeadlineMs: number;
  /** gRPC request timeout towards io-engines. */
  requestTimeoutMs: number;
  /**
   * How long a Faulted nexus child is waited for (--faulted-child-wait-period, upstream's 10 min):
   * when its replica is back within it (its io-engine answers and lists it), the same replica is
   * added back and rebuilt from the nexus's log of missed writes (partial rebuild); after it, or
   * if the replica is gone, it is replaced by a new replica. 0: replaced at once.
   */
  faultedChildWaitMs: number;
  /** --disable-partial-rebuild: never wait for a faulted child (as a wait period of 0). */
  disablePartialRebuild: boolean;
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
  faultedChildWaitMs: 600_000,
  disablePartialRebuild: false,
  poolCommitmentPercent: 250,
  volumeCommitmentPercent: 40,
  eventsKept: 1000,
} satisfies Partial<CoreConfig>;
