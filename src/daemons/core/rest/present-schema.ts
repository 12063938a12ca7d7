import {
  childReplicaUuid,
  currentReplicaSnapshots,
  type NexusSpec,
  operationName,
  poolRefName,
  poolRefUuid,
  type ReplicaSnapshot,
  type ReplicaSpec,
  specStatusName,
  type VolumeSnapshot,
} from '../../../lib/specs/index.js';
import type { Registry } from '../registry.js';
import { predecessorBytes, replicaSnapshotBytes } from '../snapshot-space.js';
import { poolOut, volumeOut } from './present.js';

/**
 * REST bodies the OpenAPI document (openapi.ts) asks for beyond present.ts: space usage with every
 * required field, `GET /specs` as REST `Specs`, and snapshot transactions as REST `ReplicaSnapshot`.
 */

/**
 * A storctl replica is a sparse file; its allocation is counted in 4 KiB file-system blocks, so that
 * block is the "cluster" of Mayastor's ReplicaSpaceUsage.
 */
export const CLUSTER_SIZE = 4096;

const clusters = (bytes: number) => Math.ceil(bytes / CLUSTER_SIZE);

/** REST `ReplicaSpaceUsage` of a replica of `capacity` bytes with `allocated` bytes in use. */
export function replicaSpace(reg: Registry, replica: ReplicaSpec, capacity: number, allocated: number) {
  const snapshots = replicaSnapshotBytes(reg, replica);
  return {
    capacity_bytes: capacity,
    allocated_bytes: allocated,
    allocated_bytes_snapshots: snapshots,
    allocated_bytes_all_snapshots: snapshots,
    cluster_size: CLUSTER_SIZE,
    clusters: clusters(capacity),
    allocated_clusters: clusters(allocated),
  };
}

/** REST `ReplicaUsage` (a volume's replica_topology entry). */
export function replicaUsage(reg: Registry, replica: ReplicaSpec, capacity: number, allocated: number) {
  const snapshots = replicaSnapshotBytes(reg, replica);
  return { capacity, allocated, allocated_snapshots: snapshots, allocated_all_snapshots: snapshots };
}

type ReplicaUsage = ReturnType<typeof replicaUsage>;

/**
 * REST `VolumeUsage` from its replicas' usage (replica_topology): the largest of the online replicas,
 * and totals over all replicas that report one. Undefined while no replica reports its usage.
 */
export function volumeUsage(capacity: number, replicas: { state?: unknown; usage?: ReplicaUsage }[]) {
  const all = replicas.filter((r) => r.usage).map((r) => r.usage!);
  const healthy = replicas.filter((r) => r.state === 'Online' && r.usage).map((r) => r.usage!);
  if (all.length === 0) return undefined;
  const max = (f: (u: ReplicaUsage) => number) => Math.max(0, ...healthy.map(f));
  const sum = (f: (u: ReplicaUsage) => number) => all.reduce((a, u) => a + f(u), 0);
  return {
    capacity,
    allocated: max((u) => u.allocated + u.allocated_snapshots),
    allocated_replica: max((u) => u.allocated),
    allocated_snapshots: max((u) => u.allocated_snapshots),
    allocated_all_snapshots: max((u) => u.allocated_all_snapshots),
    total_allocated: sum((u) => u.allocated + u.allocated_snapshots),
    total_allocated_replicas: sum((u) => u.allocated),
    total_allocated_snapshots: sum((u) => u.allocated_snapshots),
  };
}

const op = (o: { operation: string | object; result: boolean | null } | null | undefined) =>
  o ? { operation: operationName(o.operation), result: o.result ?? undefined } : undefined;

const KIND = { regular: 'Regular', snapshot: 'Snapshot', snapshotClone: 'SnapshotClone' } as const;

/** REST `ReplicaSpec`: the nexuses owning a replica are those whose children name it. */
export function replicaSpecOut(reg: Registry, r: ReplicaSpec) {
  const nexuses = [...reg.nexuses.values()]
    .filter((n) => n.children.some((c) => childReplicaUuid(c) === r.uuid))
    .map((n) => n.uuid);
  return {
    uuid: r.uuid,
    pool: poolRefName(r.pool),
    poolUuid: poolRefUuid(r.pool) ?? undefined,
    size: r.size,
    thin: r.thin,
    share: r.share,
    status: specStatusName(r.status),
    managed: r.managed,
    owners: { nexuses, volume: r.owners.volume ?? undefined },
    operation: op(r.operation),
    kind: KIND[r.kind ?? 'regular'],
  };
}

/** REST `NexusSpec`: children as their URIs. */
export function nexusSpecOut(n: NexusSpec) {
  return {
    uuid: n.uuid,
    node: n.node,
    children: n.children.map((c) => ('Replica' in c ? c.Replica.share_uri : c.Uri)),
    managed: n.managed,
    owner: n.owner ?? undefined,
    share: n.share,
    size: n.size,
    status: specStatusName(n.spec_status),
    operation: op(n.operation),
  };
}

/** `GET /specs`: REST `Specs`, the specs as REST shows them (not the stored values). */
export function specsOut(reg: Registry) {
  return {
    volumes: [...reg.volumes.values()].map((v) => volumeOut(reg, v).spec),
    pools: [...reg.pools.values()].map((p) => poolOut(reg, p).spec),
    replicas: [...reg.replicas.values()].map((r) => replicaSpecOut(reg, r)),
    nexuses: [...reg.nexuses.values()].map(nexusSpecOut),
  };
}

/**
 * REST `ReplicaSnapshotState` of each replica snapshot of the current attempt: `online` while the
 * replica's node is up, `offline` otherwise. The predecessors are the earlier snapshots of the same
 * replica.
 */
export function replicaSnapshotsOut(reg: Registry, s: VolumeSnapshot) {
  return currentReplicaSnapshots(s).map((r: ReplicaSnapshot) => {
    const src = r.spec.source_id;
    const base = {
      uuid: r.spec.uuid,
      source_id: src.replica_id,
      pool_id: src.pool_id,
      pool_uuid: src.pool_uuid,
    };
    const replica = reg.replicas.get(src.replica_id);
    const node = replica ? reg.replicaNode(replica) : reg.pools.get(src.pool_id)?.node;
    if (!node || !reg.isOnline(node)) return { offline: base };
    const taken = String(r.metadata.timestamp ?? s.metadata.timestamp ?? '');
    return {
      online: {
        ...base,
        timestamp: taken,
        size: Number(r.metadata.size ?? 0),
        allocated_size: Number(r.metadata.allocated_size ?? 0),
        predecessor_alloc_size: predecessorBytes(reg, s.spec.source_id, src.replica_id, taken),
      },
    };
  });
}
