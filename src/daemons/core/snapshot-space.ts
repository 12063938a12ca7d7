import { currentReplicaSnapshots, type ReplicaSpec } from '../../lib/specs/index.js';
import type { Registry } from './registry.js';

/*
 * What replica snapshots hold, summed over core's snapshot specs: read by the snapshot operation
 * (a snapshot's total) and by the REST presenters (replica usage, predecessors).
 */

/** Bytes the replica snapshots taken of one replica hold (their allocation when taken). */
export function replicaSnapshotBytes(reg: Registry, replica: ReplicaSpec): number {
  // Its volume's snapshots; a replica already removed from its volume (its destroy still pending)
  // no longer names it, and its snapshots are found among all.
  const snapshots = replica.owners.volume
    ? reg.volumeSnapshots(replica.owners.volume)
    : reg.snapshots.values();
  let sum = 0;
  for (const s of snapshots)
    for (const records of Object.values(s.metadata.transactions))
      for (const r of records)
        if (r.spec.source_id.replica_id === replica.uuid) sum += Number(r.metadata.allocated_size ?? 0);
  return sum;
}

/**
 * Bytes held by the snapshots of one replica of volume `volumeId` taken before `taken` (an ISO
 * timestamp).
 */
export function predecessorBytes(
  reg: Registry,
  volumeId: string,
  replicaUuid: string,
  taken: string,
): number {
  let sum = 0;
  for (const s of reg.volumeSnapshots(volumeId))
    for (const r of currentReplicaSnapshots(s))
      if (r.spec.source_id.replica_id === replicaUuid && String(r.metadata.timestamp ?? '') < taken)
        sum += Number(r.metadata.allocated_size ?? 0);
  return sum;
}
