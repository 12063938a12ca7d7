import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { RestError } from '../../../src/lib/rest/errors.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/**
 * How long a snapshot lives (docs/mayastor-compat.md §2.1): as upstream's, it outlives its volume
 * (Kubernetes deletes a PVC and keeps its VolumeSnapshot); a volume restored from it outlives it; a
 * delete cut short by a node's outage is finished by core, not left Deleting.
 */
describe('snapshot lifetime', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 3 });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  /** The files of a snapshot's replica snapshots, in their pools' directories. */
  const snapshotFiles = async (snapId: string) => {
    const snap = await c.rest.getSnapshot(snapId);
    const pools = await c.rest.listPools();
    return snap.state.replica_snapshots.map(({ online: r }) => {
      if (!r) throw new Error(`a replica snapshot of ${snapId} is offline`);
      const pool = pools.find((p) => p.id === r.pool_id)!;
      return join(pool.spec!.disks[0], 'snapshots', `${r.uuid}.img`);
    });
  };

  /** Replica snapshots the io-engines hold for volume snapshot `snapId` (named `<snapId>/<txn>`). */
  const heldFor = async (snapId: string) => {
    const held: string[] = [];
    for (const node of ['node-1', 'node-2', 'node-3']) {
      const engine = new IoEngineClient(c.engine(node).grpc);
      try {
        for (const s of await engine.listReplicaSnapshots())
          if (s.name.startsWith(`${snapId}/`)) held.push(s.uuid);
      } finally {
        engine.close();
      }
    }
    return held.sort();
  };

  it("keeps a volume's snapshots when it is deleted, and a restored volume's data when its snapshot is", async () => {
    const id = newVolumeId();
    const published = await c.createPublished(id, { size: 16 * MiB, replicas: 2, node: 'node-1' });
    await qemuIo(published.state.target!.deviceUri, 'write -P 0x3c 0 2M');
    const snapId = newVolumeId();
    await c.rest.createSnapshot(id, snapId);
    await qemuIo(published.state.target!.deviceUri, 'write -P 0x11 0 2M'); // after the snapshot
    await c.rest.unpublishVolume(id);

    await c.rest.deleteVolume(id);
    expect((await c.rest.getVolume(id).catch((e: RestError) => e)) as RestError).toMatchObject({
      kind: 'NotFound',
    });
    const kept = await c.rest.getSnapshot(snapId);
    expect(kept.definition.spec.source_volume).toBe(id);
    expect(kept.state.replica_snapshots.every((r) => r.online)).toBe(true);

    const cloneId = newVolumeId();
    await c.rest.createCloneVolume(snapId, cloneId, {
      size: 16 * MiB,
      replicas: 2,
      thin: true,
      policy: { self_heal: true },
    });
    const clone = await c.rest.publishVolume(cloneId, { protocol: 'nbd', publish_context: {} });
    await qemuIo(clone.state.target!.deviceUri, 'read -P 0x3c 0 2M');

    const files = await snapshotFiles(snapId);
    await c.rest.deleteSnapshot(snapId);
    expect(files.filter((f) => existsSync(f))).toEqual([]);
    const listed = await c.rest.listSnapshotsPage({ maxEntries: 0 });
    expect(listed.entries.map((e) => e.definition.spec.uuid)).not.toContain(snapId);
    await qemuIo(clone.state.target!.deviceUri, 'read -P 0x3c 0 2M'); // the restored volume's own data
    await c.rest.unpublishVolume(cloneId);
    await c.rest.deleteVolume(cloneId);
  }, 90_000);

  it('finishes a snapshot delete that an io-engine outage cut short, once the io-engine is back', async () => {
    const id = newVolumeId();
    await c.rest.createVolume(id, { size: 8 * MiB, replicas: 3, thin: true, policy: { self_heal: false } });
    const snapId = newVolumeId();
    await c.rest.createSnapshot(id, snapId);
    const files = await snapshotFiles(snapId);
    expect(files).toHaveLength(3);

    const down = c.engine('node-3');
    down.proc.child.kill('SIGKILL');
    await down.proc.wait();
    const cut = await c.rest.deleteSnapshot(snapId).catch((e: RestError) => e);
    expect(cut).toBeInstanceOf(RestError);
    expect((cut as RestError).message).toContain(
      '1 replica snapshot(s) could not be destroyed now; the garbage collector retries',
    );
    const left = await c.rest.getSnapshot(snapId);
    expect(left.definition.metadata.status).toBe('Deleting');
    expect(files.filter((f) => existsSync(f))).toHaveLength(1);

    await c.startEngine('node-3', { grpc: down.grpc, nbd: down.nbd });
    // No second delete: core's GC finishes it.
    await waitFor(
      async () => (await c.rest.getSnapshot(snapId).catch((e: RestError) => e)) instanceof RestError,
      {
        what: 'the snapshot gone without a second delete',
        timeoutMs: 30_000,
      },
    );
    expect(files.filter((f) => existsSync(f))).toEqual([]);
    const deleted = (await c.events()).filter((e) => e.includes(`"id":"${snapId}","action":"Deleted"`));
    expect(deleted).toHaveLength(1);
    await c.rest.deleteVolume(id);
  }, 90_000);

  /**
   * A 2-replica volume and a snapshot attempt of it that failed: one replica snapshot is taken, the
   * other's io-engine (stopped) does not answer in time, and takes it once it runs again.
   */
  const failedAttempt = async () => {
    const id = newVolumeId();
    const v = await c.rest.createVolume(id, {
      size: 8 * MiB,
      replicas: 2,
      thin: true,
      policy: { self_heal: false },
    });
    const stoppedNode = Object.values(v.state.replica_topology)[1].node!;
    const stopped = c.engine(stoppedNode);
    const snapId = newVolumeId();
    stopped.proc.child.kill('SIGSTOP');
    try {
      await expect(c.rest.createSnapshot(id, snapId)).rejects.toBeInstanceOf(RestError);
    } finally {
      stopped.proc.child.kill('SIGCONT');
    }
    return { id, snapId, stoppedNode };
  };

  it('removes a failed snapshot attempt of a volume once the volume is deleted', async () => {
    const { id, snapId } = await failedAttempt();
    const failed = await c.rest.getSnapshot(snapId);
    expect(failed.definition.metadata.status).toBe('Creating');
    const taken = failed.state.replica_snapshots.filter((r) => r.online);
    expect(taken).toHaveLength(1);
    const pool = (await c.rest.listPools()).find((p) => p.id === taken[0].online!.pool_id)!;
    const file = join(pool.spec!.disks[0], 'snapshots', `${taken[0].online!.uuid}.img`);
    expect(existsSync(file)).toBe(true);

    await c.rest.deleteVolume(id);
    // Nothing can complete that attempt now: core's GC removes it and what it took.
    await waitFor(
      async () => (await c.rest.getSnapshot(snapId).catch((e: RestError) => e)) instanceof RestError,
      {
        what: 'the failed attempt removed',
        timeoutMs: 30_000,
      },
    );
    expect(existsSync(file)).toBe(false);
    // And the replica snapshot the stopped io-engine took once it ran again.
    expect(await heldFor(snapId)).toEqual([]);
  }, 90_000);

  it('leaves nothing of a failed attempt on the io-engines once a retry has created the snapshot', async () => {
    const { id, snapId, stoppedNode } = await failedAttempt();
    await waitFor(async () => (await c.rest.getNode(stoppedNode)).state?.status === 'Online', {
      what: `${stoppedNode} online again`,
      timeoutMs: 30_000,
    });
    const snap = await c.rest.createSnapshot(id, snapId);
    expect(snap.definition.metadata.status).toBe('Created');
    const current = snap.state.replica_snapshots.map((r) => r.online!.uuid).sort();
    expect(current).toHaveLength(2);
    // The first attempt's replica snapshots, the one answered and the one taken late, are destroyed
    // by core's GC: the io-engines hold the created snapshot's two, nothing else.
    // The record keeps only the current attempt once the GC is done (REST shows every attempt).
    const attempts = async () =>
      Object.keys(
        ((await c.rest.getSnapshot(snapId)).definition.metadata as { transactions?: object }).transactions ??
          {},
      );
    let held: string[] = [];
    await waitFor(
      async () => {
        held = await heldFor(snapId);
        return JSON.stringify(held) === JSON.stringify(current) && (await attempts()).length === 1;
      },
      { what: `the io-engines holding only ${current.join(', ')} for ${snapId}`, timeoutMs: 30_000 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; they hold ${held.join(', ')}`);
    });
    await c.rest.deleteSnapshot(snapId);
    expect(await heldFor(snapId)).toEqual([]);
    await c.rest.deleteVolume(id);
  }, 90_000);

  it('destroys what a pool holds once it is imported again, when the delete came while it was not', async () => {
    const id = newVolumeId();
    const v = await c.rest.createVolume(id, {
      size: 8 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const [[replica, { node, pool }]] = Object.entries(v.state.replica_topology);
    const snapId = newVolumeId();
    await c.rest.createSnapshot(id, snapId);
    const io = new IoEngineClient(c.engine(node!).grpc);
    try {
      // As right after its io-engine restarted: the pool not imported (yet), what it holds not loaded.
      await io.exportPool(pool!);
      const refused = (await c.rest.deleteSnapshot(snapId).catch((e: RestError) => e)) as RestError;
      expect(refused.kind).toBe('Unavailable');
      await c.rest.deleteVolume(id);
      // Core imports the pool again, then its GC destroys both.
      await waitFor(
        async () =>
          (await c.rest.getSnapshot(snapId).catch((e: RestError) => e)) instanceof RestError &&
          (await c.rest.listReplicas()).every((r) => r.uuid !== replica),
        { what: `snapshot ${snapId} and replica ${replica} collected`, timeoutMs: 30_000 },
      );
      expect(await heldFor(snapId)).toEqual([]);
      expect((await io.listReplicas()).map((r) => r.uuid)).not.toContain(replica);
    } finally {
      io.close();
    }
  }, 90_000);

  it('restores from the replica snapshots whose nodes are up when the first one recorded is down', async () => {
    const id = newVolumeId();
    const published = await c.createPublished(id, { size: 8 * MiB, replicas: 2, node: 'node-1' });
    await qemuIo(published.state.target!.deviceUri, 'write -P 0x4e 0 1M');
    const snapId = newVolumeId();
    await c.rest.createSnapshot(id, snapId);
    await c.rest.unpublishVolume(id);
    const [first, second] = (await c.rest.getSnapshot(snapId)).state.replica_snapshots.map((r) => r.online!);
    const pools = await c.rest.listPools();
    const nodeOf = (poolId: string) => pools.find((p) => p.id === poolId)!.spec!.node;
    const down = c.engine(nodeOf(first.pool_id));
    down.proc.child.kill('SIGKILL');
    await down.proc.wait();
    try {
      await waitFor(async () => (await c.rest.getNode(down.node)).state.status === 'Offline', {
        what: `${down.node} Offline`,
      });
      const two = await c.rest
        .createCloneVolume(snapId, newVolumeId(), {
          size: 8 * MiB,
          replicas: 2,
          thin: true,
          policy: { self_heal: true },
        })
        .catch((e: RestError) => e);
      expect((two as RestError).kind).toBe('Unavailable');
      expect((two as RestError).message).toContain('1 of its 2 replica snapshot(s) are on nodes online now');
      const cloneId = newVolumeId();
      const clone = await c.rest.createCloneVolume(snapId, cloneId, {
        size: 8 * MiB,
        replicas: 1,
        thin: true,
        policy: { self_heal: true },
      });
      expect(Object.values(clone.state.replica_topology).map((r) => r.pool)).toEqual([second.pool_id]);
      const served = await c.rest.publishVolume(cloneId, { protocol: 'nbd', publish_context: {} });
      await qemuIo(served.state.target!.deviceUri, 'read -P 0x4e 0 1M');
      await c.rest.unpublishVolume(cloneId);
      await c.rest.deleteVolume(cloneId);
    } finally {
      await c.startEngine(down.node, { grpc: down.grpc, nbd: down.nbd });
    }
    await c.rest.deleteSnapshot(snapId).catch(() => {}); // its node may not be polled back yet: the GC finishes it
    await c.rest.deleteVolume(id);
  }, 90_000);
});
