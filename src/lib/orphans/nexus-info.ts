import { hasRecord } from '../catalog/cluster.js';
import type { StoreSnapshot } from './snapshot.js';
import type { Orphan } from './types.js';

/**
 * NexusInfo records nothing will read again: `volume/<id>/nexus/<nexus>/info` of a volume with no
 * VolumeSpec, and `nexus/<nexus>/info` (an unowned nexus's) with no NexusSpec. Core does not serve
 * these keys, so `--delete` removes them from the store, guarded on their mod revision and on the
 * owner still being absent.
 */
export function findNexusInfoOrphans(snap: StoreSnapshot): Orphan[] {
  const out: Orphan[] = [];
  for (const rec of snap.nexusInfo) {
    const owned = rec.volumeId
      ? hasRecord(snap.cluster, 'VolumeSpec', rec.volumeId)
      : hasRecord(snap.cluster, 'NexusSpec', rec.nexusId);
    if (owned) continue;
    out.push({
      kind: 'nexus-info',
      id: rec.nexusId,
      volume: rec.volumeId,
      node: null,
      pool: null,
      reason: rec.volumeId
        ? `NexusInfo of volume ${rec.volumeId}, which does not exist`
        : `NexusInfo of nexus ${rec.nexusId}, which has no NexusSpec`,
      action: 'delete the key from the store (compare on its mod revision)',
      key: rec.key,
      modRevision: rec.modRevision,
    });
  }
  return out;
}
