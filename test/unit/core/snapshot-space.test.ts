import { describe, expect, it } from 'vitest';
import type { Registry } from '../../../src/daemons/core/registry.js';
import { replicaSnapshotBytes } from '../../../src/daemons/core/snapshot-space.js';
import type { ReplicaSpec, VolumeSnapshot } from '../../../src/lib/specs/index.js';

/** A snapshot of volume `volume` with one replica snapshot per [replica, allocated bytes]. */
const snapshot = (uuid: string, volume: string, of: [string, number][]) =>
  ({
    spec: { uuid, source_id: volume },
    metadata: {
      txn_id: '1',
      transactions: {
        '1': of.map(([replica_id, bytes]) => ({
          spec: { source_id: { replica_id } },
          metadata: { allocated_size: bytes },
        })),
      },
    },
  }) as unknown as VolumeSnapshot;

const replica = (uuid: string, volume: string | null) =>
  ({ uuid, owners: { volume } }) as unknown as ReplicaSpec;

/** The two registry reads replicaSnapshotBytes makes: all snapshots, and a volume's (its index). */
const registryOf = (snapshots: VolumeSnapshot[]) =>
  ({
    snapshots: new Map(snapshots.map((s) => [s.spec.uuid, s])),
    volumeSnapshots: (id: string) => snapshots.filter((s) => s.spec.source_id === id),
  }) as unknown as Registry;

describe('replicaSnapshotBytes', () => {
  const reg = registryOf([
    snapshot('s1', 'vol-a', [
      ['r1', 100],
      ['r2', 50],
    ]),
    snapshot('s2', 'vol-a', [['r1', 30]]),
    snapshot('s3', 'vol-b', [['r9', 7]]),
  ]);

  it("sums a replica's snapshots of its volume", () => {
    expect(replicaSnapshotBytes(reg, replica('r1', 'vol-a'))).toBe(130);
    expect(replicaSnapshotBytes(reg, replica('r2', 'vol-a'))).toBe(50);
  });

  it('still sums them once the replica is removed from its volume (its destroy pending)', () => {
    expect(replicaSnapshotBytes(reg, replica('r1', null))).toBe(130);
  });
});
