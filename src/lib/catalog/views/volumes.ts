import { humanizeBytes } from '../../output/humanize.js';
import type { Column, Listing } from '../../output/render.js';
import { storedVolume } from '../../rest/present.js';
import {
  createdState,
  healthInfoNexusId,
  healthyChildren,
  operationName,
  specStatusName,
  type VolumeSpec,
  volumeContentSource,
  volumeNexusId,
  volumeTargetNode,
  volumeTargetProtocol,
} from '../../specs/index.js';
import { type ClusterState, specsOf } from '../cluster.js';

export const VOLUME_TYPES = ['VolumeSpec', 'VolumeSnapshot', 'NexusInfo'] as const;

export interface VolumeRow {
  spec: VolumeSpec;
  status: string;
  snapshots: number;
}

/**
 * Volume status as far as the store can tell: the spec's state, refined by the NexusInfo of its
 * target (a published volume with fewer healthy children than replicas is Degraded, none Faulted).
 */
export function volumeStatus(state: ClusterState, v: VolumeSpec): string {
  const created = createdState(v.status);
  if (created === null) return specStatusName(v.status);
  const nexus = healthInfoNexusId(v);
  const info = nexus ? state.nexusInfo.get(v.uuid)?.find((i) => i.nexusId === nexus)?.info : undefined;
  if (!info || !volumeNexusId(v)) return created;
  const healthy = healthyChildren(info).length;
  if (healthy === 0) return 'Faulted';
  return healthy < v.num_replicas ? 'Degraded' : created;
}

function thinText(v: VolumeSpec): string {
  return v.thin ? (v.metadata?.persisted.snapshot_as_thin ? 'true (snapped)' : 'true') : 'false';
}

const labelsText = (labels: Record<string, string> | null | undefined) =>
  labels && Object.keys(labels).length
    ? Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')
    : null;

export { labelsText };

/** How many snapshots have each volume as their source (REST's `num_snapshots`). */
export function snapshotCounts(state: ClusterState): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of specsOf(state, 'VolumeSnapshot'))
    counts[s.spec.source_id] = (counts[s.spec.source_id] ?? 0) + 1;
  return counts;
}

export function volumeRow(state: ClusterState, spec: VolumeSpec, counts: Record<string, number>): VolumeRow {
  return {
    spec,
    // Core's view when it answers (it sees the nexus and its children), else the store's.
    status: state.live?.volumes.get(spec.uuid)?.state.status ?? volumeStatus(state, spec),
    snapshots: counts[spec.uuid] ?? 0,
  };
}

export function volumeColumns(state: ClusterState): Column<VolumeRow>[] {
  return [
    { header: 'ID', get: (r) => r.spec.uuid },
    { header: 'REPLICAS', get: (r) => r.spec.num_replicas },
    { header: 'TARGET-NODE', get: (r) => volumeTargetNode(r.spec) },
    { header: 'ACCESSIBILITY', get: (r) => volumeTargetProtocol(r.spec) },
    { header: 'STATUS', get: (r) => r.status },
    { header: 'SIZE', get: (r) => humanizeBytes(r.spec.size) },
    { header: 'THIN-PROVISIONED', get: (r) => thinText(r.spec) },
    {
      // Only core knows what the replicas hold on disk (REST VolumeUsage.allocated).
      header: 'ALLOCATED',
      get: (r) => {
        const usage = state.live?.volumes.get(r.spec.uuid)?.state.usage;
        return usage ? humanizeBytes(usage.allocated) : null;
      },
    },
    { header: 'SNAPSHOTS', get: (r) => r.snapshots },
    { header: 'SOURCE', get: (r) => (volumeContentSource(r.spec) ? 'Snapshot' : null) },
    { header: 'NEXUS', get: (r) => volumeNexusId(r.spec), wide: true },
    {
      header: 'TARGET',
      get: (r) => state.live?.volumes.get(r.spec.uuid)?.state.target?.deviceUri,
      wide: true,
    },
    {
      header: 'OPERATION',
      get: (r) => (r.spec.operation ? operationName(r.spec.operation.operation) : null),
      wide: true,
    },
    { header: 'LABELS', get: (r) => labelsText(r.spec.labels), wide: true },
  ];
}

export function volumeListing(state: ClusterState, filter?: (v: VolumeSpec) => boolean): Listing<VolumeRow> {
  const counts = snapshotCounts(state);
  return {
    rows: specsOf(state, 'VolumeSpec')
      .filter((v) => !filter || filter(v))
      .map((spec) => volumeRow(state, spec, counts)),
    columns: volumeColumns(state),
    // REST's volume: core's own when it answers, else the stored spec in its shape.
    object: (r) => state.live?.volumes.get(r.spec.uuid) ?? storedVolume(r.spec, r.snapshots),
  };
}
