import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { runStorctl } from '../../helpers/storctl.js';
import { newVolumeId, TestCluster } from '../core/cluster.js';

const MiB = 1 << 20;

/**
 * A replica snapshot of core's naming (`<snapshot>/<transaction>`) that its volume snapshot does not
 * record: left by a storctl that recorded only confirmed replica snapshots (an attempt whose io-engine
 * answered too late), or by a store restored from a dump older than it. Pool space nobody would ever
 * free: `storctl orphans` names it, `--delete -y` destroys exactly it, and the snapshot stays.
 */
describe('storctl orphans: replica snapshots no volume snapshot records', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it('names a replica snapshot its volume snapshot does not record, and --delete destroys only it', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ engines: 1 });
    const c = cluster;
    const id = newVolumeId();
    const v = await c.rest.createVolume(id, {
      size: 8 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const snapId = newVolumeId();
    const made = await c.rest.createSnapshot(id, snapId);
    expect(made.definition.metadata.status).toBe('Created');
    const io = new IoEngineClient(c.engine('node-1').grpc);
    try {
      // As an earlier attempt (transaction 7) would have left it, with no record of it in the store.
      const left = await io.createReplicaSnapshot({
        replicaUuid: Object.keys(v.state.replica_topology)[0],
        snapshotUuid: newVolumeId(),
        name: `${snapId}/7`,
      });

      const listed = await runStorctl(['orphans', '-o', 'json'], { env: c.env });
      expect(listed.code, listed.stderr).toBe(0);
      const found = JSON.parse(listed.stdout) as { kind: string; id: string; reason: string }[];
      expect(found).toEqual([
        expect.objectContaining({
          kind: 'engine-snapshot',
          id: left.uuid,
          reason: `io-engine node-1 holds it (transaction 7 of snapshot ${snapId}), but that snapshot does not record it: a failed attempt or a store restored from an earlier dump left it`,
        }),
      ]);

      const deleted = await runStorctl(['orphans', '--delete', '-y', '-o', 'json'], { env: c.env });
      expect(deleted.code, deleted.stderr).toBe(0);
      const held = await io.listReplicaSnapshots();
      expect(held.map((s) => s.name)).toEqual([`${snapId}/1`]);
      expect((await runStorctl(['orphans', '-o', 'json'], { env: c.env })).stdout.trim()).toBe('[]');
    } finally {
      io.close();
    }
  });
});
