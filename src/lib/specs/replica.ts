/**
 * ReplicaSpec, key `ReplicaSpec/<replica-uuid>` (docs/mayastor-compat.md §1.7).
 * Note the camelCase status: `{"Created":"online"}` (VolumeSpec says `"Online"`). The pool is an
 * untagged PoolRef: `"pool-1"` or `["pool-1", "<pool-uuid>"]`.
 */
import {
  array,
  bool,
  type Codec,
  literals,
  nullable,
  string,
  tagged,
  tuple,
  u64,
  untagged,
  uuid,
} from './codec.js';
import {
  type OperationRecord,
  operationRecord,
  type Protocol,
  protocol,
  type ShareProtocol,
  type SpecStatus,
  shareProtocol,
  specCodec,
  specStatus,
} from './common.js';
import { field, optional, struct } from './struct.js';

/** Mayastor's ReplicaStatus, serialized camelCase. */
export const replicaStatuses = ['unknown', 'online', 'degraded', 'faulted'] as const;
export type ReplicaStatus = (typeof replicaStatuses)[number];

/** Pool by name, or by name and uuid. */
export type PoolRef = string | [string, string];

export const replicaKinds = ['regular', 'snapshot', 'snapshotClone'] as const;
export type ReplicaKind = (typeof replicaKinds)[number];

/** Owners of a replica. Nexus owners are not stored (re-derived from NexusSpecs at start-up). */
export interface ReplicaOwners {
  volume: string | null;
  disown_all: boolean;
}

export type ReplicaOperation =
  | 'Create'
  | 'Destroy'
  | { Share: [ShareProtocol, string[]] }
  | 'Unshare'
  | { OwnerUpdate: ReplicaOwners }
  | { Resize: number };

export interface ReplicaSpec {
  /** Replica name; the uuid by default. */
  name: string;
  uuid: string;
  size: number;
  pool: PoolRef;
  share: Protocol;
  thin: boolean;
  status: SpecStatus<ReplicaStatus>;
  /** Managed by the control plane (unmanaged replicas are never garbage-collected). */
  managed: boolean;
  owners: ReplicaOwners;
  operation: OperationRecord<ReplicaOperation> | null;
  /** Host NQNs allowed to connect to the shared replica. */
  allowed_hosts: string[];
  /** Left out when regular. */
  kind?: ReplicaKind;
}

const poolName: Codec<string> = string;
const poolNameAndUuid = tuple(string, uuid);

export const poolRef: Codec<PoolRef> = untagged<PoolRef>(
  'a pool name or [pool name, pool uuid]',
  [poolName, poolNameAndUuid],
  (v) => (typeof v === 'string' ? poolName : poolNameAndUuid),
);

export const replicaOwners = struct<ReplicaOwners>('ReplicaOwners', {
  volume: field(nullable(uuid)),
  disown_all: field(bool, { default: () => false }),
});

const replicaOperation = tagged<ReplicaOperation>({
  Create: null,
  Destroy: null,
  Share: tuple(shareProtocol, array(string)),
  Unshare: null,
  OwnerUpdate: replicaOwners,
  Resize: u64,
});

export const replicaSpecCodec: Codec<ReplicaSpec> = struct<ReplicaSpec>('ReplicaSpec', {
  name: field(string),
  uuid: field(uuid),
  size: field(u64),
  pool: field(poolRef),
  share: field(protocol),
  thin: field(bool),
  status: field(specStatus(literals(replicaStatuses))),
  managed: field(bool),
  owners: field(replicaOwners),
  operation: field(nullable(operationRecord('ReplicaOperationState', replicaOperation))),
  allowed_hosts: field(array(string), { default: () => [] }),
  kind: optional(literals(replicaKinds), (k) => k === 'regular'),
});

export const replicaSpec = specCodec<ReplicaSpec>('ReplicaSpec', replicaSpecCodec, 'uuid', (r) => r.uuid);

/** Name of the pool a PoolRef points at. */
export function poolRefName(ref: PoolRef): string {
  return typeof ref === 'string' ? ref : ref[0];
}

/** Uuid of the pool a PoolRef points at, when it carries one. */
export function poolRefUuid(ref: PoolRef): string | null {
  return typeof ref === 'string' ? null : ref[1];
}

/** Name of the pool the replica lives on. */
export function replicaPoolName(r: ReplicaSpec): string {
  return poolRefName(r.pool);
}

/** Kind of the replica (`regular` when the field is absent). */
export function replicaKind(r: ReplicaSpec): ReplicaKind {
  return r.kind ?? 'regular';
}

/** Whether the replica's stored owners name this volume. */
export function isOwnedByVolume(r: ReplicaSpec, volumeId: string): boolean {
  return r.owners.volume === volumeId;
}
