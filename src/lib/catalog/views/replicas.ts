import { humanizeBytes } from '../../output/humanize.js';
import type { Listing } from '../../output/render.js';
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

export interface ReplicaRow {
  spec: ReplicaSpec;
  node: string | null;
  /** Health recorded by the io-engine in the NexusInfo of the owning volume's target. */
  childStatus: 'Online' | 'Faulted' | null;
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
      return {
        spec,
        node: state.specs.PoolSpec?.get(replicaPoolName(spec))?.node ?? null,
        childStatus: child ? (child.healthy ? 'Online' : 'Faulted') : null,
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

/** kubectl-mayastor's `get volume-replica-topology`: one volume's replicas and their health. */
export function replicaTopologyListing(state: ClusterState, volumeId: string): Listing<ReplicaRow> {
  return {
    rows: replicaRows(state, (r) => r.owners.volume === volumeId),
    columns: [
      { header: 'ID', get: (r) => r.spec.uuid },
      { header: 'NODE', get: (r) => r.node },
      { header: 'POOL', get: (r) => replicaPoolName(r.spec) },
      { header: 'STATUS', get: (r) => replicaStatus(r.spec) },
      { header: 'CAPACITY', get: (r) => humanizeBytes(r.spec.size) },
      { header: 'ALLOCATED', get: () => null },
      { header: 'SNAPSHOTS', get: () => null },
      { header: 'CHILD-STATUS', get: (r) => r.childStatus },
      {
        header: 'REASON',
        get: (r) => (r.childStatus === 'Faulted' ? 'marked unhealthy in NexusInfo' : null),
      },
      { header: 'REBUILD', get: () => null },
    ],
    object: (r) => ({
      ...(specJson('ReplicaSpec', r.spec) as object),
      node: r.node,
      child_status: r.childStatus,
    }),
  };
}
