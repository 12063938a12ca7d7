import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { runStorctl } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from '../core/cluster.js';

const MiB = 1 << 20;

/**
 * A snapshot attempt whose io-engine answered too late (it was stalled past core's request
 * timeout, then made the replica snapshot anyway) leaves a replica snapshot no volume snapshot
 * records: pool space nobody would ever free. `storctl orphans` names it, `--delete -y` destroys
 * exactly it, and the snapshot the retry made stays.
 */
describe('storctl orphans: replica snapshots no volume snapshot records', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    for (const e of cluster?.engines ?? []) e.proc.child.kill('SIGCONT');
    await cluster?.stop();
    cluster = undefined;
  });

  it('names the replica snapshot a failed attempt left, and --delete destroys only it', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ engines: 1 });
    const c = cluster;
    const id = newVolumeId();
    await c.rest.createVolume(id, { size: 8 * MiB, replicas: 1, thin: true, policy: { self_heal: false } });
    const snapId = newVolumeId();
    const engine = c.engine('node-1');
    engine.proc.child.kill('SIGSTOP');
    try {
      await expect(c.rest.createSnapshot(id, snapId)).rejects.toThrow(/DeadlineExceeded/);
    } finally {
      engine.proc.child.kill('SIGCONT');
    }
    const io = new IoEngineClient(engine.grpc);
    try {
      // Woken, the io-engine makes the replica snapshot core gave up on: transaction 1.
      const [left] = await waitFor(
        async () => {
          const held = await io.listReplicaSnapshots();
          return held.length ? held : null;
        },
        { what: 'the late replica snapshot' },
      );
      expect(left.name).toBe(`${snapId}/1`);
      // The retry takes transaction 2, recorded in the volume snapshot.
      const made = await c.rest.createSnapshot(id, snapId);
      expect(made.definition.metadata.status).toBe('Created');

      const listed = await runStorctl(['orphans', '-o', 'json'], { env: c.env });
      expect(listed.code, listed.stderr).toBe(0);
      const found = JSON.parse(listed.stdout) as { kind: string; id: string; reason: string }[];
      expect(found).toEqual([
        expect.objectContaining({
          kind: 'engine-snapshot',
          id: left.uuid,
          reason: `io-engine node-1 holds it (transaction 1 of snapshot ${snapId}), but that snapshot does not record it: an attempt that failed left it`,
        }),
      ]);

      const deleted = await runStorctl(['orphans', '--delete', '-y', '-o', 'json'], { env: c.env });
      expect(deleted.code, deleted.stderr).toBe(0);
      const held = await io.listReplicaSnapshots();
      expect(held.map((s) => s.name)).toEqual([`${snapId}/2`]);
      expect((await runStorctl(['orphans', '-o', 'json'], { env: c.env })).stdout.trim()).toBe('[]');
    } finally {
      io.close();
    }
  });
});
