import { humanizeBytes } from '../../output/humanize.js';
import type { Listing } from '../../output/render.js';
import { snapshotDefinitionOut } from '../../rest/present.js';
import {
  currentReplicaSnapshots,
  snapshotAllocated,
  snapshotOperationName,
  specStatusName,
  type VolumeSnapshot,
  volumeContentSource,
} from '../../specs/index.js';
import { type ClusterState, specsOf } from '../cluster.js';

export const SNAPSHOT_TYPES = ['VolumeSnapshot', 'VolumeSpec'] as const;

interface SnapshotRow {
  spec: VolumeSnapshot;
  restores: number;
}

export function snapshotListing(state: ClusterState, volumeId?: string): Listing<SnapshotRow> {
  const restores = new Map<string, number>();
  for (const v of specsOf(state, 'VolumeSpec')) {
    const source = volumeContentSource(v);
    if (source) restores.set(source[0], (restores.get(source[0]) ?? 0) + 1);
  }
  const rows = specsOf(state, 'VolumeSnapshot')
    .filter((s) => !volumeId || s.spec.source_id === volumeId)
    .map((spec) => ({ spec, restores: restores.get(spec.spec.uuid) ?? 0 }));
  return {
    rows,
    columns: [
      { header: 'ID', get: (r) => r.spec.spec.uuid },
      { header: 'TIMESTAMP', get: (r) => r.spec.metadata.timestamp },
      { header: 'SOURCE-SIZE', get: (r) => humanizeBytes(r.spec.metadata.spec_size) },
      { header: 'ALLOCATED-SIZE', get: (r) => humanizeBytes(snapshotAllocated(r.spec)) },
      { header: 'TOTAL-ALLOCATED-SIZE', get: (r) => humanizeBytes(r.spec.metadata.total_allocated_size) },
      { header: 'SOURCE-VOL', get: (r) => r.spec.spec.source_id },
      { header: 'RESTORES', get: (r) => r.restores },
      { header: 'SNAPSHOT_REPLICAS', get: (r) => currentReplicaSnapshots(r.spec).length },
      // Creating: taken only in part (a failed create left it, to retry or delete); Deleting: going.
      { header: 'STATUS', get: (r) => specStatusName(r.spec.status), wide: true },
      { header: 'OPERATION', get: (r) => snapshotOperationName(r.spec), wide: true },
    ],
    // REST's snapshot: core's own when it answers, else the stored definition in its shape.
    object: (r) =>
      state.live?.snapshots.get(r.spec.spec.uuid) ?? {
        definition: snapshotDefinitionOut(r.spec, r.restores),
      },
  };
}
