/**
 * The stored specs as Mayastor serializes them (reference §1.5–1.11): snake_case fields, serde's
 * externally tagged enums. Unknown fields are kept (`...rest` spreads) so a value read from a real
 * Mayastor store is written back unchanged apart from what core edits.
 */

export type SpecStatus<T> = 'Creating' | 'Deleting' | 'Deleted' | { Created: T };

export interface SpecOperation<Op> {
  operation: Op;
  result: boolean | null;
}

export interface Labelled {
  exclusion?: Record<string, string>;
  inclusion?: Record<string, string>;
  creation_affinity_keys?: string[] | null;
}

export interface Topology {
  node?: null | { Explicit: { allowed_nodes: string[]; preferred_nodes: string[] } } | { Labelled: Labelled };
  pool?: null | { Labelled: Labelled };
}

export interface TargetConfig {
  node: string;
  nexus: string;
  protocol: string | null;
  active?: boolean;
  config?: Record<string, unknown>;
  frontend?: { host_acl: { node_name: string; node_nqn: string }[] };
  [extra: string]: unknown;
}

export type VolumeOp =
  | 'Create'
  | 'Destroy'
  | 'Unpublish'
  | { SetReplica: number }
  | { Publish2: { config: TargetConfig; publish_context: Record<string, string> | null } }
  | { Republish: { config: TargetConfig } }
  | { Resize: number }
  | { CreateSnapshot: string }
  | { DestroySnapshot: string }
  | { RemoveUnusedReplica: string }
  | { Share: string }
  | 'Unshare';

export interface VolumeSpec {
  uuid: string;
  size: number;
  labels: Record<string, string> | null;
  num_replicas: number;
  status: SpecStatus<string>;
  policy: { self_heal: boolean };
  topology: Topology | null;
  last_nexus_id: string | null;
  operation: SpecOperation<VolumeOp> | null;
  thin: boolean;
  content_source?: { Snapshot: [string, string] };
  target: TargetConfig | null;
  publish_context: Record<string, string> | null;
  affinity_group: { id: string } | null;
  max_snapshots?: number;
  [extra: string]: unknown;
}

export type ReplicaOp = 'Create' | 'Destroy' | { OwnerUpdate: ReplicaOwners } | { Resize: number };
export interface ReplicaOwners {
  volume: string | null;
  disown_all: boolean;
}

export interface ReplicaSpec {
  name: string;
  uuid: string;
  size: number;
  pool: string | [string, string];
  share: string;
  thin: boolean;
  status: SpecStatus<string>;
  managed: boolean;
  owners: ReplicaOwners;
  operation: SpecOperation<ReplicaOp> | null;
  allowed_hosts?: string[];
  [extra: string]: unknown;
}

export type PoolOp = 'Create' | 'Destroy' | { Label: unknown } | { Unlabel: unknown };
export interface PoolSpec {
  node: string;
  id: string;
  disks: string[];
  status: SpecStatus<string>;
  labels: Record<string, string> | null;
  operation: SpecOperation<PoolOp> | null;
  [extra: string]: unknown;
}

export type NexusChild = { Replica: { uuid: string; share_uri: string } } | { Uri: string };
export type NexusOp =
  | 'Create'
  | 'Destroy'
  | 'Shutdown'
  | { AddChild: NexusChild }
  | { RemoveChild: NexusChild };
export interface NexusSpec {
  uuid: string;
  name: string;
  node: string;
  children: NexusChild[];
  size: number;
  spec_status: SpecStatus<string>;
  share: string;
  managed: boolean;
  owner: string | null;
  operation: SpecOperation<NexusOp> | null;
  [extra: string]: unknown;
}

export type CordonDrainState =
  | { Cordoned: { cordonlabels: string[] } }
  | { Draining: { cordonlabels: string[]; drainlabels: string[] } }
  | { Drained: { cordonlabels: string[]; drainlabels: string[] } };

export interface NodeSpec {
  id: string;
  endpoint: string;
  labels?: Record<string, string>;
  cordon_drain_state?: CordonDrainState | null;
  node_nqn?: string;
  draining_volumes?: string[];
  operation?: unknown;
  [extra: string]: unknown;
}

export interface VolumeSnapshot {
  status: SpecStatus<null>;
  spec: { source_id: string; uuid: string };
  metadata: {
    operation: SpecOperation<unknown> | null;
    timestamp: string | null;
    spec_size: number;
    size: number;
    total_allocated_size: number;
    txn_id: string;
    transactions: Record<string, ReplicaSnapshotRecord[]>;
    [extra: string]: unknown;
  };
  [extra: string]: unknown;
}

export interface ReplicaSnapshotRecord {
  status: SpecStatus<null>;
  spec: { source_id: { replica_id: string; pool_id: string; pool_uuid: string | null }; uuid: string };
  metadata: Record<string, unknown>;
}

/** NexusInfo written by io-engines (reference §1.12). */
export interface NexusInfo {
  clean_shutdown: boolean;
  children: { uuid: string; healthy: boolean }[];
}

/** The flattened REST status of a SpecStatus. */
export function flatStatus(s: SpecStatus<unknown>): 'Creating' | 'Created' | 'Deleting' | 'Deleted' {
  return typeof s === 'string' ? s : 'Created';
}

export function isCreated(s: SpecStatus<unknown>): boolean {
  return typeof s === 'object' && s !== null && 'Created' in s;
}

/** The name of an operation (`{"SetReplica":3}` → `SetReplica`), as REST shows it. */
export function opName(op: unknown): string {
  if (typeof op === 'string') return op;
  if (op && typeof op === 'object') {
    const k = Object.keys(op)[0];
    return k === 'Publish2' ? 'Publish' : k;
  }
  return String(op);
}

export function poolName(ref: ReplicaSpec['pool']): string {
  return Array.isArray(ref) ? ref[0] : ref;
}

export function isCordoned(node: NodeSpec): boolean {
  return node.cordon_drain_state != null;
}

export function childReplicaUuid(c: NexusChild): string | null {
  if ('Replica' in c) return c.Replica.uuid;
  const m = /[?&]uuid=([^&]+)/.exec(c.Uri);
  return m ? m[1] : null;
}
