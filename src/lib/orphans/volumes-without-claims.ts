import { specsOf } from '../catalog/cluster.js';
import { volumeTargetNode } from '../specs/index.js';
import type { PersistentVolume, PersistentVolumeClaim } from './kube/client.js';
import type { StoreSnapshot } from './snapshot.js';
import type { Orphan } from './types.js';

/** PVs and PVCs as the orphan check indexes them. */
export interface ClaimIndex {
  /** Volume ids PVs name (spec.csi.volumeHandle), and PV names (`pvc-<uuid>`). */
  pvHandles: Set<string>;
  pvNames: Set<string>;
  /** PVC uids (`pvc-<uid>` is the name a provisioner asks for, so the uid is the volume id). */
  pvcUids: Set<string>;
  source: string;
}

export function indexClaims(
  pvs: PersistentVolume[],
  pvcs: PersistentVolumeClaim[],
  source: string,
): ClaimIndex {
  return {
    pvHandles: new Set(pvs.flatMap((pv) => (pv.spec?.csi?.volumeHandle ? [pv.spec.csi.volumeHandle] : []))),
    pvNames: new Set(pvs.map((pv) => pv.metadata.name)),
    pvcUids: new Set(pvcs.map((c) => c.metadata.uid)),
    source,
  };
}

/** Whether Kubernetes still knows the volume: a PV with its handle (or named pvc-<id>), or its PVC. */
export function isClaimed(index: ClaimIndex, volumeId: string): boolean {
  return index.pvHandles.has(volumeId) || index.pvNames.has(`pvc-${volumeId}`) || index.pvcUids.has(volumeId);
}

/**
 * Volumes with neither a PersistentVolume nor a PersistentVolumeClaim: no PV's csi.volumeHandle is
 * the volume (nor is a PV named pvc-<uuid>), and no PVC has the uid the volume was provisioned for.
 * Volumes being created or deleted are core's business and are skipped.
 */
export function findVolumesWithoutClaims(index: ClaimIndex | null, snap: StoreSnapshot): Orphan[] {
  if (!index) return [];
  const out: Orphan[] = [];
  for (const v of specsOf(snap.cluster, 'VolumeSpec')) {
    if (typeof v.status !== 'object' || v.operation) continue;
    if (isClaimed(index, v.uuid)) continue;
    const publishedOn = volumeTargetNode(v);
    const reason = `no PersistentVolume and no PersistentVolumeClaim in ${index.source} refer to it`;
    out.push({
      kind: 'volume-without-claim',
      id: v.uuid,
      volume: v.uuid,
      node: publishedOn,
      pool: null,
      // Published, something uses it all the same (core refuses the delete, if_unpublished).
      reason: publishedOn ? `${reason}, yet it is published on node ${publishedOn}: in use` : reason,
      action: publishedOn
        ? 'none while it is published: --delete leaves it; unpublish it first if it is truly unused'
        : `DELETE /volumes/${v.uuid} through core (after checking the API again)`,
    });
  }
  return out;
}
