import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NbdClient } from '../../../src/lib/nbd/client.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from './cluster.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * A snapshot of a published volume under writes: core holds the target's I/O while every replica
 * is snapshotted, so the replica snapshots hold the same writes (a clone's replicas are identical),
 * and the writes go on once it is taken.
 */
describe('snapshot of a published volume under writes', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 3 });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('every replica snapshot holds the same bytes; writes resume after it', async () => {
    const id = newVolumeId();
    const published = await c.createPublished(id, { size: 8 * MiB, replicas: 3, node: 'node-1' });
    const nbd = await NbdClient.connect(published.state.target!.deviceUri);
    let written = 0;
    let stop = false;
    const writing = (async () => {
      const buf = Buffer.alloc(64 * KiB);
      while (!stop) {
        buf.fill(1 + (written % 250));
        await nbd.write(buf, (written % 128) * 64 * KiB, false);
        written++;
      }
    })();
    try {
      await waitFor(() => written >= 50, { what: 'writes under way' });
      const snapId = newVolumeId();
      const snap = await c.rest.createSnapshot(id, snapId);
      const after = written;
      await waitFor(() => written >= after + 50, { what: 'writes to go on after the snapshot' });
      stop = true;
      await writing;

      const { transactions } = snap.definition.metadata as unknown as {
        transactions: Record<string, { uuid: string; source_id: string }[]>;
      };
      const records = Object.values(transactions).flat();
      expect(records).toHaveLength(3);
      const v = await c.rest.getVolume(id);
      const pools = await c.rest.listPools();
      const hashes = await Promise.all(
        records.map(async (r) => {
          const pool = pools.find((p) => p.id === v.state.replica_topology[r.source_id].pool)!;
          const file = join(pool.spec!.disks[0], 'snapshots', `${r.uuid}.img`);
          return createHash('sha256')
            .update(await readFile(file))
            .digest('hex');
        }),
      );
      expect(new Set(hashes).size).toBe(1);
      await c.rest.deleteSnapshot(snapId);
    } finally {
      stop = true;
      await writing.catch(() => {});
      await nbd.close();
    }
    await c.rest.unpublishVolume(id);
    await c.rest.deleteVolume(id);
  }, 90_000);
});
