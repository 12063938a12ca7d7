/**
 * VolumeSnapshot, key `VolumeSnapshot/<snapshot-uuid>` (docs/mayastor-compat.md §1.11). The replica
 * snapshots of each creation attempt (transaction) live inside it, not under keys of their own.
 * Status is `SpecStatus<()>`: `{"Created":null}` when created.
 */
import {
  anyJson,
  array,
  type Codec,
  fail,
  nullable,
  record,
  string,
  tagged,
  u64,
  uuid,
  variantName,
} from './codec.js';
import { type OperationRecord, operationRecord, type SpecStatus, specCodec, specStatus } from './common.js';
import { cloneSpec, field, struct } from './struct.js';

export type SnapshotStatus = SpecStatus<null>;

export interface ReplicaSnapshotSource {
  replica_id: string;
  pool_id: string;
  pool_uuid: string;
}

export interface ReplicaSnapshotMetadata {
  /** Shape not modelled by storctl: kept as stored. */
  operation: OperationRecord<unknown> | null;
  timestamp: string | null;
  source_spec_size: number;
  size: number;
  allocated_size: number;
  /** How the snapshot was taken (serde `SnapshotMeta`): part of a volume snapshot, alone, or unknown. */
  meta: 'Default' | { Replica: { txn_id: string } } | { Volume: { parent: string; txn_id: string } };
}

export interface ReplicaSnapshot {
  status: SnapshotStatus;
  spec: { source_id: ReplicaSnapshotSource; uuid: string };
  metadata: ReplicaSnapshotMetadata;
}

export type VolumeSnapshotOperation =
  | { Create: { txn_id: string; replicas: ReplicaSnapshot[] } }
  | 'Destroy'
  | 'CleanupStaleTransactions'
  | { CreateRestore: { volume_uuid: string } }
  | { DestroyRestore: { volume_uuid: string } };

export interface VolumeSnapshotMetadata {
  operation: OperationRecord<VolumeSnapshotOperation> | null;
  /** RFC 3339 creation time, once created. */
  timestamp: string | null;
  spec_size: number;
  size: number;
  total_allocated_size: number;
  /** Current creation attempt, a decimal string starting at "1". */
  txn_id: string;
  /** Replica snapshots of each attempt, by txn id. */
  transactions: Record<string, ReplicaSnapshot[]>;
}

export interface VolumeSnapshot {
  status: SnapshotStatus;
  spec: { source_id: string; uuid: string };
  metadata: VolumeSnapshotMetadata;
}

/** Rust `()`: serialized as null. */
const unit: Codec<null> = {
  expected: 'null',
  decode: (raw) => (raw === null ? null : fail('null', raw)),
  encode: () => null,
};
const unitStatus = specStatus(unit);

const txnId: Codec<string> = {
  expected: 'a decimal transaction id string',
  decode: (raw) =>
    typeof raw === 'string' && /^\d+$/.test(raw) ? raw : fail('a decimal transaction id string', raw),
  encode: (v) => v,
};

export const replicaSnapshotCodec: Codec<ReplicaSnapshot> = struct<ReplicaSnapshot>('ReplicaSnapshot', {
  status: field(unitStatus),
  spec: field(
    struct<ReplicaSnapshot['spec']>('ReplicaSnapshotSpec', {
      source_id: field(
        struct<ReplicaSnapshotSource>('ReplicaSnapshotSource', {
          replica_id: field(uuid),
          pool_id: field(string),
          pool_uuid: field(uuid),
        }),
      ),
      uuid: field(uuid),
    }),
  ),
  metadata: field(
    struct<ReplicaSnapshotMetadata>('ReplicaSnapshotMeta', {
      operation: field(nullable(operationRecord('ReplicaSnapshotOperationState', anyJson))),
      timestamp: field(nullable(string)),
      source_spec_size: field(u64, { default: () => 0 }),
      size: field(u64, { default: () => 0 }),
      allocated_size: field(u64, { default: () => 0 }),
      meta: field(
        tagged<ReplicaSnapshotMetadata['meta']>({
          Default: null,
          Replica: struct<{ txn_id: string }>('ReplicaSnapshotReplicaMeta', { txn_id: field(string) }),
          Volume: struct<{ parent: string; txn_id: string }>('ReplicaSnapshotVolumeMeta', {
            parent: field(uuid),
            txn_id: field(txnId),
          }),
        }),
      ),
    }),
  ),
});

const volumeUuid = struct<{ volume_uuid: string }>('RestoreOperation', { volume_uuid: field(uuid) });

const volumeSnapshotOperation = tagged<VolumeSnapshotOperation>({
  Create: struct<{ txn_id: string; replicas: ReplicaSnapshot[] }>('VolumeSnapshotCreateInfo', {
    txn_id: field(txnId),
    replicas: field(array(replicaSnapshotCodec)),
  }),
  Destroy: null,
  CleanupStaleTransactions: null,
  CreateRestore: volumeUuid,
  DestroyRestore: volumeUuid,
});

export const volumeSnapshotCodec: Codec<VolumeSnapshot> = struct<VolumeSnapshot>('VolumeSnapshot', {
  status: field(unitStatus),
  spec: field(
    struct<VolumeSnapshot['spec']>('VolumeSnapshotSpec', { source_id: field(uuid), uuid: field(uuid) }),
  ),
  metadata: field(
    struct<VolumeSnapshotMetadata>('VolumeSnapshotMeta', {
      operation: field(nullable(operationRecord('VolumeSnapshotOperationState', volumeSnapshotOperation))),
      timestamp: field(nullable(string)),
      spec_size: field(u64, { default: () => 0 }),
      size: field(u64, { default: () => 0 }),
      total_allocated_size: field(u64, { default: () => 0 }),
      txn_id: field(txnId, { default: () => '1' }),
      transactions: field(record(array(replicaSnapshotCodec)), { default: () => ({}) }),
    }),
  ),
});

export const volumeSnapshot = specCodec<VolumeSnapshot>(
  'VolumeSnapshot',
  volumeSnapshotCodec,
  'spec.uuid',
  (s) => s.spec.uuid,
);

/** Volume the snapshot was taken of. */
export function snapshotSourceVolume(s: VolumeSnapshot): string {
  return s.spec.source_id;
}

/** Every replica snapshot the record holds, of all its transactions (failed attempts' too). */
export function allReplicaSnapshots(s: VolumeSnapshot): ReplicaSnapshot[] {
  return Object.values(s.metadata.transactions).flat();
}

/**
 * A copy of the record without the replica snapshots `drop` picks; an earlier attempt left with
 * none goes, the current one stays.
 */
export function withoutReplicaSnapshots(
  s: VolumeSnapshot,
  drop: (r: ReplicaSnapshot) => boolean,
): VolumeSnapshot {
  const copy = cloneSpec(s);
  for (const [txn, records] of Object.entries(copy.metadata.transactions)) {
    const kept = records.filter((r) => !drop(r));
    if (kept.length || txn === copy.metadata.txn_id) copy.metadata.transactions[txn] = kept;
    else delete copy.metadata.transactions[txn];
  }
  return copy;
}

/**
 * Replica snapshots of the current transaction (the attempt that counts) that were taken: a failed
 * attempt also records those its io-engine never confirmed (status Creating), to destroy them.
 */
export function currentReplicaSnapshots(s: VolumeSnapshot): ReplicaSnapshot[] {
  return (s.metadata.transactions[s.metadata.txn_id] ?? []).filter((r) => r.status !== 'Creating');
}

/**
 * Bytes the snapshot holds: the allocation of its largest replica snapshot, each being its source
 * replica's allocation when taken (REST's snapshot state `allocated_size`).
 */
export function snapshotAllocated(s: VolumeSnapshot): number {
  return Math.max(0, ...currentReplicaSnapshots(s).map((r) => Number(r.metadata.allocated_size ?? 0)));
}

/** Name of the snapshot operation in progress, or null. */
export function snapshotOperationName(s: VolumeSnapshot): string | null {
  const op = s.metadata.operation?.operation;
  return op === undefined ? null : variantName(op);
}

/** Name io-engine gives a replica snapshot: `<volume-snapshot-uuid>/<txn_id>`. */
export function replicaSnapshotName(volumeSnapshotId: string, txnId: string): string {
  return `${volumeSnapshotId}/${txnId}`;
}
