/**
 * The one store contract every layer uses. Semantics are etcd's (revisions, compare-and-swap
 * transactions, leases, prefix watches); both backends (etcd, embedded SQLite) implement it and pass
 * the same contract test suite, so nothing above this file knows which backend it runs on.
 *
 * Revisions are plain numbers: etcd's int64 revisions stay far below 2^53 in practice.
 */

export interface KeyValue {
  key: string;
  value: string;
  /** Revision of the transaction that created the key (since its last deletion). */
  createRevision: number;
  /** Revision of the last transaction that modified the key. */
  modRevision: number;
  /** Number of modifications since creation (1 after the first put). */
  version: number;
  /** Lease the key is attached to, lowercase hex; '0' when none. */
  lease: string;
}

export type CompareOp = '==' | '!=' | '<' | '>';

/**
 * A guard of a transaction. A missing key has create/mod revision 0, version 0, value absent, lease '0';
 * as in etcd, a value compare on a missing key is false whatever the op. Values compare byte-wise (UTF-8).
 */
export type Compare =
  | { key: string; target: 'mod' | 'create' | 'version'; op: CompareOp; value: number }
  | { key: string; target: 'value'; op: CompareOp; value: string }
  | { key: string; target: 'lease'; op: '==' | '!='; value: string };

export type TxnOp =
  | { type: 'put'; key: string; value: string; lease?: string }
  | { type: 'delete'; key: string }
  | { type: 'deletePrefix'; prefix: string }
  | { type: 'get'; key: string };

export interface TxnRequest {
  compare: Compare[];
  success: TxnOp[];
  failure?: TxnOp[];
}

export interface TxnOpResult {
  /** For 'get': the key, or null. */
  kv?: KeyValue | null;
  /** For 'delete'/'deletePrefix': how many keys were deleted. */
  deleted?: number;
}

export interface TxnResult {
  succeeded: boolean;
  /** Store revision after the transaction (unchanged when nothing was written). */
  revision: number;
  responses: TxnOpResult[];
}

export interface RangeOptions {
  /** Maximum number of keys returned; 0 or absent = all. */
  limit?: number;
  /** First key to return (inclusive); must lie under the prefix. */
  startKey?: string;
  /** Stop before this key (exclusive); must lie under the prefix. Absent: the prefix's end. */
  endKey?: string;
}

export interface RangeResult {
  kvs: KeyValue[];
  /** True when keys beyond `limit` remain under the prefix. */
  more: boolean;
  /** Store revision at which the range was read. */
  revision: number;
  /**
   * Keys in the whole requested range, returned or not, when the backend reports it for free
   * (etcd does; the embedded store does not).
   */
  count?: number;
}

/**
 * One page of a range as etcd sent it (a RangeResponse), decoded by whoever uses its values
 * (lib/store/etcd-range-codec.ts), with what a reader needs to read on.
 */
export interface EncodedRange {
  bytes: Uint8Array;
  /** Key-values in the page. */
  n: number;
  lastKey: string | undefined;
  /** True when keys beyond the page's limit remain. */
  more: boolean;
  /** Keys in the whole requested range. */
  count: number;
  revision: number;
}

export interface KeysValuesRange {
  keys: string[];
  values: string[];
  /** True when keys beyond the page's limit remain. */
  more: boolean;
}

export type WatchEvent =
  | { type: 'put'; kv: KeyValue; prev?: KeyValue }
  | { type: 'delete'; key: string; modRevision: number; prev?: KeyValue };

export interface WatchOptions {
  /** Deliver events from this revision on (inclusive). Absent: only events after the watch starts. */
  fromRevision?: number;
}

/**
 * A live prefix watch. Events arrive in revision order, each exactly once, across reconnects.
 * When the requested revision has been compacted away, 'compacted' fires once with the oldest
 * revision still available and the watch ends; the caller re-lists and watches again.
 */
export interface Watch {
  on(event: 'event', listener: (e: WatchEvent) => void): this;
  on(event: 'compacted', listener: (compactRevision: number) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  /** Revision of the last event delivered (or the start revision - 1); resume from lastRevision + 1. */
  readonly lastRevision: number;
  /** Stop the watch; no event is delivered once close() was called (even from inside a listener). */
  close(): Promise<void>;
}

export interface Lease {
  /** Lease id, lowercase hex without 0x (Mayastor's StoreLeaseOwner.lease_id format). */
  readonly id: string;
  readonly ttlSeconds: number;
  /**
   * Aborted when the lease is lost: expired, revoked (here or elsewhere), or no keepalive succeeded
   * for a whole TTL (the lease may be gone on the server, so a single writer must stop writing).
   */
  readonly lost: AbortSignal;
  /** Put a key attached to this lease. */
  put(key: string, value: string): Promise<{ revision: number }>;
  keepAliveOnce(): Promise<void>;
  /** Revoke: every key attached to the lease is deleted. Idempotent. */
  revoke(): Promise<void>;
  /** Stop keepalives without revoking (the lease expires after its TTL). */
  release(): void;
}

export interface LeaseOptions {
  /** Keep the lease alive automatically (every ttl/3). Default true. */
  keepAlive?: boolean;
}

export interface Store {
  readonly backend: 'etcd' | 'embedded';
  /** Human-readable endpoint for messages: `etcd://h:p,…` or `sqlite:PATH`. */
  readonly endpoint: string;

  get(key: string): Promise<KeyValue | null>;
  /** Keys under `prefix`, sorted ascending by key. */
  range(prefix: string, options?: RangeOptions): Promise<RangeResult>;
  /**
   * etcd only: one page of `range` (`options.limit` keys at most) left encoded, for listings that
   * decode their pages on a worker thread.
   */
  rangeEncoded?(prefix: string, options: RangeOptions & { limit: number }): Promise<EncodedRange>;
  /**
   * Embedded only: one page of `range` as its keys and values alone, for the same listings: no
   * revisions, no object per key (a quarter less SQLite time over 100k keys).
   */
  rangeKeysValues?(prefix: string, options: RangeOptions & { limit: number }): Promise<KeysValuesRange>;
  put(key: string, value: string, options?: { lease?: string }): Promise<{ revision: number }>;
  delete(key: string): Promise<{ deleted: number; revision: number }>;
  deletePrefix(prefix: string): Promise<{ deleted: number; revision: number }>;
  txn(request: TxnRequest): Promise<TxnResult>;
  /** Current store revision. */
  revision(): Promise<number>;

  grantLease(ttlSeconds: number, options?: LeaseOptions): Promise<Lease>;
  /**
   * Revoke any lease by id (e.g. a dead holder's, found in a StoreLeaseOwner record): its keys are
   * deleted and its holder's `lost` fires at its next keepalive. Idempotent.
   */
  revokeLease(id: string): Promise<void>;
  /** Remaining TTL in seconds of a lease, or -1 when it does not exist (expired/revoked). */
  leaseTimeToLive(id: string): Promise<number>;

  watch(prefix: string, options?: WatchOptions): Promise<Watch>;
  /**
   * Discard history before `revision`; later watches from older revisions report compaction.
   * Compacting to or below an earlier compaction is a no-op; past the current revision a UsageError.
   */
  compact(revision: number): Promise<void>;
  /**
   * etcd only: the alarms its members raised (NOSPACE: the space quota is exhausted; CORRUPT: the
   * members' data differ). While one is raised etcd refuses every write.
   */
  alarms?(): Promise<StoreAlarm[]>;
  /** etcd only: each endpoint of the store URL, and whether its member answers now. */
  endpointHealth?(): Promise<{ endpoint: string; error?: string }[]>;

  close(): Promise<void>;
}

export interface StoreAlarm {
  /** The member that raised it, as etcdctl prints member ids (hex). */
  member: string;
  alarm: 'NOSPACE' | 'CORRUPT' | string;
}
