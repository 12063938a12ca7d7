import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { RestError } from '../../../src/lib/rest/errors.js';
import { runStorctl } from '../../helpers/storctl.js';
import { newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/**
 * Emptying a pool to delete it: the refusal names the volumes whose replicas it holds and how to
 * move them; cordoning the node makes a scale-down remove the replica there first, even when the
 * volume's target is on that node (its local replica would otherwise be kept).
 */
describe('core: a pool is emptied before it is deleted', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it('pool delete names the volumes and snapshots it holds; node cordon + scale-down moves the volumes off; then the pool goes', async () => {
    cluster = await TestCluster.start({ engines: 3 });
    const c = cluster;
    const id = newVolumeId();
    await c.rest.createVolume(id, { size: 16 * MiB, replicas: 3, thin: true, policy: { self_heal: false } });
    const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-3' });
    await qemuIo(v.state.target!.deviceUri, 'write -P 0x5c 0 4M');
    const snapId = newVolumeId(); // one of its replica snapshots is taken in pool-node-3
    await c.rest.createSnapshot(id, snapId);

    const refused = await c.rest.deletePool('pool-node-3').then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(RestError);
    expect((refused as RestError).kind).toBe('InUse');
    expect((refused as RestError).details).toBe('PoolNotEmpty');
    expect((refused as RestError).message).toContain(
      `pool 'pool-node-3' still holds replicas of 1 volume(s) (${id})`,
    );
    // The CLI prints the way out from the message, not a generic "wait and retry".
    const cli = await runStorctl(['pool', 'delete', 'pool-node-3'], { env: c.env });
    expect(cli.code).toBe(4);
    expect(cli.stderr).toContain('`storctl node cordon node-3`, then `storctl volume scale ID <replicas+1>`');
    expect(cli.stderr).not.toContain('wait for the resource');

    await c.rest.cordonNode('node-3', 'empty-pool');
    await c.rest.scaleVolume(id, 2);
    const left = (await c.rest.listReplicas()).filter((r) => r.owner === id);
    expect(left.map((r) => r.node).sort()).toEqual(['node-1', 'node-2']);
    // The target stayed on node-3, now with remote children only, and serves the data.
    const after = await c.rest.getVolume(id);
    expect(after.state.target?.node).toBe('node-3');
    await qemuIo(after.state.target!.deviceUri, 'read -P 0x5c 0 4M');

    // The replica snapshot stays where it was taken: the refusal names its snapshot, and how to go on.
    const held = await runStorctl(['pool', 'delete', 'pool-node-3'], { env: c.env });
    expect(held.code).toBe(4);
    expect(held.stderr).toContain(`still holds replica snapshots of 1 volume snapshot(s) (${snapId})`);
    expect(held.stderr).toContain('`storctl snapshot delete ID`');
    await c.rest.deleteSnapshot(snapId);
    await c.rest.deletePool('pool-node-3');
    expect((await c.rest.listPools()).map((p) => p.id)).not.toContain('pool-node-3');
  }, 120_000);

  it('a pool whose disk is gone for good is deleted with the replica and snapshot whose deletes waited for it', async () => {
    cluster = await TestCluster.start({ engines: 1 });
    const c = cluster;
    const id = newVolumeId();
    const v = await c.rest.createVolume(id, {
      size: 8 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const [[replica, { pool }]] = Object.entries(v.state.replica_topology);
    const snapId = newVolumeId();
    await c.rest.createSnapshot(id, snapId);
    const disk = (await c.rest.listPools()).find((p) => p.id === pool)!.spec!.disks[0];
    const io = new IoEngineClient(c.engine('node-1').grpc);
    try {
      await io.exportPool(pool!);
    } finally {
      io.close();
    }
    await rm(disk, { recursive: true, force: true });
    // Both deletes wait for the pool, which cannot come back.
    expect(((await c.rest.deleteSnapshot(snapId).catch((e: RestError) => e)) as RestError).kind).toBe(
      'Unavailable',
    );
    await c.rest.deleteVolume(id);
    expect((await c.rest.listReplicas()).find((r) => r.uuid === replica)).toBeDefined();

    await c.rest.deletePool(pool!);
    expect((await c.rest.listPools()).map((p) => p.id)).not.toContain(pool);
    expect((await c.rest.listReplicas()).find((r) => r.uuid === replica)).toBeUndefined();
    expect(((await c.rest.getSnapshot(snapId).catch((e: RestError) => e)) as RestError).kind).toBe(
      'NotFound',
    );
  }, 60_000);
});
