import { localReplicaUri, replicaUuidOfUri } from '../../../lib/child-uri.js';
import { poolSpecOut, snapshotDefinitionOut, volumeSpecOut } from '../../../lib/rest/present.js';
import {
  childReplicaUuid,
  type NexusSpec,
  type PoolSpec,
  poolRefName,
  type ReplicaSpec,
  snapshotAllocated,
  specStatusName,
  type VolumeSnapshot,
  type VolumeSpec,
} from '../../../lib/specs/index.js';
import { nexusStateOf, replicaOnline, volumeStatus } from '../health.js';
import type { Registry } from '../registry.js';
import { replicaSnapshotsOut, replicaSpace, replicaUsage, volumeUsage } from './present-schema.js';

/** Stored specs + live state → REST v0 bodies (docs/mayastor-compat.md §2.1–2.2). */

export function nexusOut(reg: Registry, spec: NexusSpec) {
  const st = nexusStateOf(reg, spec);
  return {
    uuid: spec.uuid,
    node: spec.node,
    size: st?.size ?? spec.size,
    state: st?.state ?? 'Unknown',
    protocol: st?.protocol ?? spec.share,
    deviceUri: st?.deviceUri ?? '',
    rebuilds: st?.children.filter((c) => c.rebuildProgress != null).length ?? 0,
    shutdown_reason: st?.shutdownReason,
    children: (
      st?.children ??
      spec.children.map((c) => ({
        uri: 'Replica' in c ? c.Replica.share_uri : c.Uri,
        state: 'Unknown',
        rebuildProgress: null,
      }))
    ).map((c) => ({
      uri: c.uri,
      state: c.state,
      rebuildProgress: c.rebuildProgress ?? undefined,
    })),
  };
}

export function volumeOut(reg: Registry, v: VolumeSpec) {
  const nexus = v.target && v.target.active !== false ? reg.nexuses.get(v.target.nexus) : undefined;
  const nst = nexusStateOf(reg, nexus);
  const childState = new Map<string, string>();
  for (const c of nst?.children ?? []) {
    const uuid = replicaUuidOfUri(c.uri);
    if (uuid) childState.set(uuid, c.state);
  }
  const replica_topology: Record<string, unknown> = {};
  for (const r of reg.volumeReplicas(v.uuid)) {
    const rs = reg.replicaState(r);
    const child = nst?.children.find((c) => c.uri.includes(r.uuid));
    replica_topology[r.uuid] = {
      node: reg.replicaNode(r),
      pool: poolRefName(r.pool),
      state: replicaOnline(reg, r) ? 'Online' : 'Unknown',
      'child-status': childState.get(r.uuid),
      'rebuild-progress': child?.rebuildProgress ?? undefined,
      usage: rs ? replicaUsage(reg, r, rs.size, rs.allocated ?? 0) : undefined,
    };
  }
  return {
    spec: volumeSpecOut(v, reg.volumeSnapshots(v.uuid).length),
    state: {
      uuid: v.uuid,
      size: v.size,
      status: volumeStatus(reg, v),
      target: nexus ? nexusOut(reg, nexus) : undefined,
      replica_topology,
      usage: volumeUsage(v.size, Object.values(replica_topology) as Parameters<typeof volumeUsage>[1]),
    },
  };
}

export function replicaOut(reg: Registry, r: ReplicaSpec) {
  const node = reg.replicaNode(r);
  const st = reg.replicaState(r);
  return {
    uuid: r.uuid,
    node,
    pool: poolRefName(r.pool),
    size: r.size,
    thin: r.thin,
    share: st?.share ?? r.share,
    uri: st?.uri ?? localReplicaUri(r.uuid),
    state: replicaOnline(reg, r) ? 'Online' : 'Unknown',
    kind: 'Regular',
    owner: r.owners.volume ?? undefined,
    'allowed-hosts': r.allowed_hosts ?? [],
    space: st ? replicaSpace(reg, r, st.size, st.allocated ?? 0) : undefined,
  };
}

export function poolOut(reg: Registry, p: PoolSpec) {
  const st = reg.poolStates.get(p.id);
  const committed = [...reg.replicas.values()]
    .filter((r) => poolRefName(r.pool) === p.id)
    .reduce((a, r) => a + r.size, 0);
  return {
    id: p.id,
    spec: poolSpecOut(p),
    state:
      st && reg.isOnline(p.node)
        ? {
            id: p.id,
            node: p.node,
            disks: p.disks,
            status: st.status,
            capacity: st.capacity,
            used: st.used,
            committed,
          }
        : undefined,
  };
}

export function snapshotOut(reg: Registry, s: VolumeSnapshot) {
  return {
    definition: snapshotDefinitionOut(
      s,
      [...reg.volumes.values()].filter((v) => v.content_source?.Snapshot[0] === s.spec.uuid).length,
    ),
    state: {
      uuid: s.spec.uuid,
      source_volume: s.spec.source_id,
      allocated_size: snapshotAllocated(s),
      timestamp: s.metadata.timestamp ?? undefined,
      ready_as_source: specStatusName(s.status) === 'Created',
      replica_snapshots: replicaSnapshotsOut(reg, s),
    },
  };
}

export { childReplicaUuid };
