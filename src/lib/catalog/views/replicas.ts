import { humanizeBytes } from '../../output/humanize.js';
import type { Column, Listing } from '../../output/render.js';
import type { Volume } from '../../rest/types.js';
import {
  createdState,
  healthInfoNexusId,
  type NexusInfo,
  type ReplicaSpec,
  replicaKind,
  replicaPoolName,
  specStatusName,
  variantName,
} from '../../specs/index.js';
import { type ClusterState, specJson, specsOf } from '../cluster.js';

export const REPLICA_TYPES = ['ReplicaSpec', 'PoolSpec', 'VolumeSpec', 'NexusInfo'] as const;

/** Core's view of one replica of a volume (REST ReplicaTopology): state, child status, usage. */
type LiveReplica = Volume['state']['replica_topology'][string];

export interface ReplicaRow {
  spec: ReplicaSpec;
  node: string | null;
  /** Health recorded by the io-engine in the NexusInfo of the owning volume's target. */
  childStatus: 'Online' | 'Faulted' | null;
  /** Core's view of it, when core answered for its volume. */
  live?: LiveReplica;
}

/** The NexusInfo that holds the health of a volume's replicas (its current or last target). */
export function volumeHealthInfo(state: ClusterState, volumeId: string): NexusInfo | undefined {
  const volume = state.specs.VolumeSpec?.get(volumeId);
  const nexus = volume ? healthInfoNexusId(volume) : null;
  return nexus ? state.nexusInfo.get(volumeId)?.find((i) => i.nexusId === nexus)?.info : undefined;
}

export function replicaRows(state: ClusterState, filter?: (r: ReplicaSpec) => boolean): ReplicaRow[] {
  return specsOf(state, 'ReplicaSpec')
    .filter((r) => !filter || filter(r))
    .map((spec) => {
      const info = spec.owners.volume ? volumeHealthInfo(state, spec.owners.volume) : undefined;
      const child = info?.children.find((c) => c.uuid === spec.uuid);
      const volume = spec.owners.volume;
      return {
        spec,
        node: state.specs.PoolSpec?.get(replicaPoolName(spec))?.node ?? null,
        childStatus: child ? (child.healthy ? 'Online' : 'Faulted') : null,
        live: volume ? state.live?.volumes.get(volume)?.state.replica_topology[spec.uuid] : undefined,
      };
    });
}

/**
 * A replica's status as every other status reads (`Online`); Mayastor stores it camelCase (`online`),
 * and -o json|yaml keep what is stored.
 */
export const replicaStatus = (r: ReplicaSpec) => {
  const created = createdState(r.status);
  return created ? created[0].toUpperCase() + created.slice(1) : specStatusName(r.status);
};

export function replicaListing(state: ClusterState): Listing<ReplicaRow> {
  return {
    rows: replicaRows(state),
    columns: [
      { header: 'ID', get: (r) => r.spec.uuid },
      { header: 'POOL', get: (r) => replicaPoolName(r.spec) },
      { header: 'NODE', get: (r) => r.node },
      { header: 'SIZE', get: (r) => humanizeBytes(r.spec.size) },
      { header: 'THIN', get: (r) => r.spec.thin },
      { header: 'SHARE', get: (r) => r.spec.share },
      { header: 'STATUS', get: (r) => replicaStatus(r.spec) },
      { header: 'VOLUME', get: (r) => r.spec.owners.volume },
      { header: 'CHILD-STATUS', get: (r) => r.childStatus, wide: true },
      { header: 'MANAGED', get: (r) => r.spec.managed, wide: true },
      { header: 'KIND', get: (r) => replicaKind(r.spec), wide: true },
      {
        header: 'OPERATION',
        get: (r) => (r.spec.operation ? variantName(r.spec.operation.operation as string | object) : null),
        wide: true,
      },
    ],
    object: (r) => specJson('ReplicaSpec', r.spec),
  };
}

/**
 * The columns of kubectl-mayastor's replica topology tables. What the store records (status, the
 * health the target wrote in NexusInfo) unless core answered: then its live state, what each
 * replica holds on disk, and rebuild progress.
 */
const topologyColumns: Column<ReplicaRow>[] = [
  { header: 'ID', get: (r) => r.spec.uuid },
  { header: 'NODE', get: (r) => r.node },
  { header: 'POOL', get: (r) => replicaPoolName(r.spec) },
  { header: 'STATUS', get: (r) => r.live?.state ?? replicaStatus(r.spec) },
  { header: 'CAPACITY', get: (r) => humanizeBytes(r.spec.size) },
  { header: 'ALLOCATED', get: (r) => (r.live?.usage ? humanizeBytes(r.live.usage.allocated) : null) },
  {
    header: 'SNAPSHOTS',
    get: (r) => (r.live?.usage ? humanizeBytes(r.live.usage.allocated_snapshots) : null),
  },
  { header: 'CHILD-STATUS', get: (r) => childStatus(r) },
  {
    header: 'REASON',
    get: (r) =>
      r.live?.['child-status']
        ? r.live['child-status'] === 'Faulted'
          ? 'faulted on the target'
          : null
        : r.childStatus === 'Faulted'
          ? 'marked unhealthy in NexusInfo'
          : null,
  },
  {
    header: 'REBUILD',
    get: (r) => (r.live?.['rebuild-progress'] === undefined ? null : `${r.live['rebuild-progress']}%`),
  },
];

/** The child status core sees on the volume's target, else the one its NexusInfo recorded. */
const childStatus = (r: ReplicaRow) => r.live?.['child-status'] ?? r.childStatus;

const topologyObject = (r: ReplicaRow) => ({
  ...(specJson('ReplicaSpec', r.spec) as object),
  node: r.node,
  child_status: childStatus(r),
  usage: r.live?.usage,
  rebuild_progress: r.live?.['rebuild-progress'],
});

const byUuid = (a: ReplicaRow, b: ReplicaRow) =>
  a.spec.uuid < b.spec.uuid ? -1 : a.spec.uuid > b.spec.uuid ? 1 : 0;

/** kubectl-mayastor's `get volume-replica-topology`: one volume's replicas and their health. */
export function replicaTopologyListing(state: ClusterState, volumeId: string): Listing<ReplicaRow> {
  return {
    rows: replicaRows(state, (r) => r.owners.volume === volumeId).sort(byUuid),
    columns: topologyColumns,
    object: topologyObject,
  };
}

/**
 * kubectl-mayastor's `get volume-replica-topologies`: every volume's replicas, the volume id on its
 * first replica's row and tree glyphs on the others', so a degraded child or a rebuild stands out
 * across the cluster.
 */
export function replicaTopologiesListing(state: ClusterState): Listing<ReplicaRow & { tree: string }> {
  const byVolume = new Map<string, ReplicaRow[]>();
  for (const row of replicaRows(state, (r) => Boolean(r.owners.volume))) {
    const volume = row.spec.owners.volume!;
    if (!state.specs.VolumeSpec?.has(volume)) continue; // an orphan: `storctl orphans` lists it
    byVolume.set(volume, [...(byVolume.get(volume) ?? []), row]);
  }
  const rows = [...byVolume.keys()].sort().flatMap((volume) => {
    const replicas = byVolume.get(volume)!.sort(byUuid);
    return replicas.map((r, i) => ({
      ...r,
      tree: i === 0 ? volume : i === replicas.length - 1 ? '└─' : '├─',
    }));
  });
  return {
    rows,
    columns: [{ header: 'VOLUME-ID', get: (r) => r.tree }, ...topologyColumns],
    object: topologyObject,
  };
}
