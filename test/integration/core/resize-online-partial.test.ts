import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import type { RestError } from '../../../src/lib/rest/errors.js';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, coreFlags, newVolumeId, POOL_CAPACITY, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const exec = promisify(execFile);
const MiB = 1 << 20;

async function nbdSize(uri: string): Promise<number> {
  const { stdout } = await exec('nbdinfo', ['--size', uri], { timeout: 30_000 });
  return Number(stdout.trim());
}

interface Specs {
  volumes: { uuid: string; size: number; operation: unknown }[];
  replicas: {
    uuid: string;
    pool: unknown;
    size: number;
    owners: { volume: string | null };
    operation: unknown;
  }[];
  nexuses: { owner: string | null; size: number }[];
}

/**
 * An online resize that fails after some replicas grew is not undone (replicas cannot shrink): the
 * grown replicas are recorded at their new size, the volume keeps its size and stays usable, and a
 * later resize completes, leaving the already larger replicas as they are.
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`an online resize that fails half-way (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('keeps grown replicas, rolls the volume back, and completes on a later resize', async () => {
      // Core gives up on a stopped io-engine after 3 s; the stopped node's replicas are not replaced.
      cluster = await TestCluster.start({
        backend,
        engines: 3,
        pools: false,
        coreFlags: coreFlags({ '--request-timeout': '3s', '--node-deadline': '1h' }),
      });
      const c = cluster;
      for (const node of ['node-1', 'node-2']) await c.createNodePool(node, POOL_CAPACITY);
      const id = newVolumeId();
      const published = await c.createPublished(id, { size: 16 * MiB, replicas: 2, node: 'node-1' });
      const uri = published.state.target!.deviceUri;
      await qemuIo(uri, 'write -P 0x3c 0 8M');
      // The third replica is the last one the resize grows; its io-engine stops answering.
      await c.createNodePool('node-3', POOL_CAPACITY);
      await c.scaleToHealthy(id, 3);
      const node3 = c.engine('node-3').proc.child;
      node3.kill('SIGSTOP');
      let failed: RestError;
      try {
        failed = (await c.rest.resizeVolume(id, 48 * MiB).catch((e: RestError) => e)) as RestError;
      } finally {
        node3.kill('SIGCONT');
      }
      expect(failed.message).toMatch(/node-3/);
      // The answer says what the event says: part grown, and how to finish.
      expect(failed.message).toMatch(
        /; 2\/3 replica\(s\) grown to 50331648 bytes, target not; resize again to complete$/,
      );
      let specs = await c.rest.call<Specs>('GET', '/specs');
      const vol = specs.volumes.find((v) => v.uuid === id)!;
      expect(vol.size).toBe(16 * MiB);
      expect(vol.operation ?? null).toBeNull();
      const sizeOf = (s: Specs) =>
        s.replicas
          .filter((r) => r.owners.volume === id)
          .map((r) => ({
            node3: JSON.stringify(r.pool).includes('node-3'),
            size: r.size,
            op: r.operation ?? null,
          }))
          .sort((a, b) => Number(a.node3) - Number(b.node3));
      expect(sizeOf(specs)).toEqual([
        { node3: false, size: 48 * MiB, op: null },
        { node3: false, size: 48 * MiB, op: null },
        { node3: true, size: 16 * MiB, op: null },
      ]);
      expect((await c.events()).some((e) => e.includes('"ResizeIncomplete"') && e.includes(id))).toBe(true);
      // The volume keeps serving at its size.
      expect(await nbdSize(uri)).toBe(16 * MiB);
      await qemuIo(uri, 'read -P 0x3c 0 8M', 'write -P 0x4d 15M 1M');

      // Once the third node answers again, a smaller size completes the resize; the larger
      // replicas stay as they are.
      const done = await waitFor(() => c.rest.resizeVolume(id, 32 * MiB).catch(() => null), {
        what: 'the resize to complete once node-3 answers',
      });
      expect(done.spec.size).toBe(32 * MiB);
      specs = await c.rest.call<Specs>('GET', '/specs');
      // node-3 carried out the grow it had been sent once it ran again: recorded at its real size.
      expect(sizeOf(specs)).toEqual([
        { node3: false, size: 48 * MiB, op: null },
        { node3: false, size: 48 * MiB, op: null },
        { node3: true, size: 48 * MiB, op: null },
      ]);
      expect(specs.nexuses.find((n) => n.owner === id)?.size).toBe(32 * MiB);
      expect(await nbdSize(uri)).toBe(32 * MiB);
      await qemuIo(uri, 'write -P 0x5e 30M 2M');
      await qemuIo(uri, 'read -P 0x3c 0 8M', 'read -P 0x4d 15M 1M', 'read -P 0x5e 30M 2M');
    }, 120_000);

    it('a replica, replica snapshot or pool its io-engine no longer has fails a resize, publish, snapshot, clone or create as Unavailable, not NotFound', async () => {
      // Core does not poll meanwhile: it still counts the replica the io-engine lost.
      cluster = await TestCluster.start({
        backend,
        engines: 2,
        coreFlags: coreFlags({ '--cache-period': '1h' }),
      });
      const c = cluster;
      const id = newVolumeId();
      const v = await c.rest.createVolume(id, {
        size: 16 * MiB,
        replicas: 2,
        thin: true,
        policy: { self_heal: false },
      });
      const [lost] = Object.entries(v.state.replica_topology).find(([, r]) => r.node === 'node-2')!;
      const snapId = newVolumeId();
      const snap = await c.rest.createSnapshot(id, snapId);
      const engine = new IoEngineClient(c.engine('node-2').grpc);
      try {
        for (const r of snap.state.replica_snapshots)
          if (r.online!.source_id === lost) await engine.destroyReplicaSnapshot(r.online!.uuid);
        await engine.destroyReplica(lost);
      } finally {
        engine.close();
      }
      // A snapshot of the volume, and a volume restored from a snapshot whose replica snapshot the
      // io-engine lost: Unavailable.
      const snapshot = (await c.rest
        .createSnapshot(id, newVolumeId())
        .catch((e: RestError) => e)) as RestError;
      expect(snapshot.kind).toBe('Unavailable');
      expect(snapshot.message).toContain(lost);
      const clone = (await c.rest
        .createCloneVolume(snapId, newVolumeId(), {
          size: 16 * MiB,
          replicas: 2,
          thin: true,
          policy: { self_heal: false },
        })
        .catch((e: RestError) => e)) as RestError;
      expect(clone.kind).toBe('Unavailable');
      const failed = (await c.rest.resizeVolume(id, 32 * MiB).catch((e: RestError) => e)) as RestError;
      expect(failed.kind).toBe('Unavailable');
      expect(failed.message).toContain(lost);
      expect((await c.rest.getVolume(id)).spec.size).toBe(16 * MiB);
      // A target on that node cannot open the replica either: Unavailable too.
      const publish = (await c.rest
        .publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-2' })
        .catch((e: RestError) => e)) as RestError;
      expect(publish.kind).toBe('Unavailable');
      expect(publish.message).toContain(lost);
      // Nor is a pool it no longer has (exported behind core's back): a create placed there is refused
      // as Unavailable.
      const node2 = new IoEngineClient(c.engine('node-2').grpc);
      try {
        await node2.exportPool('pool-node-2');
      } finally {
        node2.close();
      }
      // Not even after the pool reconciler's next passes: core created the pool, so it knows the
      // io-engine had it and does not import it before a poll says it is gone. (It imported every
      // pool core created until the next poll listed it; once it was exported, the next pass did.)
      const metrics = metricsUrl(c.cores[0])!;
      const passes = await reconcilerRuns(metrics, 'pools');
      await waitFor(async () => (await reconcilerRuns(metrics, 'pools')) >= passes + 2, {
        what: 'two passes of the pool reconciler',
      });
      const create = (await c.rest
        .createVolume(newVolumeId(), { size: 8 * MiB, replicas: 2, thin: true, policy: { self_heal: false } })
        .catch((e: RestError) => e)) as RestError;
      // On failure, say what came back instead (a volume, or another error), not only its kind.
      expect({ kind: create.kind, message: create.message ?? JSON.stringify(create) }).toMatchObject({
        kind: 'Unavailable',
        message: expect.stringContaining("pool 'pool-node-2' not found"),
      });
      // Nor did it try to import a pool the io-engine had and call that a failure.
      expect((await c.events()).filter((e) => e.includes('"ImportFailed"'))).toEqual([]);
    });

    /** Two nodes, one with a 40 MiB pool, and a 16 MiB volume with a replica on each. */
    const onSmallPool = async (thin: boolean) => {
      cluster = await TestCluster.start({ backend, engines: 2, pools: false });
      await cluster.createNodePool('node-1', POOL_CAPACITY);
      await cluster.createNodePool('node-2', 40 * MiB);
      const id = newVolumeId();
      await cluster.rest.createVolume(id, {
        size: 16 * MiB,
        replicas: 2,
        thin,
        policy: { self_heal: false },
      });
      return { c: cluster, id };
    };

    it('refuses to grow a thin volume beyond a pool before any replica grows', async () => {
      const { c, id } = await onSmallPool(true);
      // A thin replica does not fit a pool smaller than itself: the 40 MiB pool takes 40 MiB at most.
      const failed = (await c.rest.resizeVolume(id, 48 * MiB).catch((e: RestError) => e)) as RestError;
      expect(failed.kind).toBe('ResourceExhausted');
      expect(failed.message).toMatch(
        /not resized: pool 'pool-node-2' on node 'node-2' holds 41943040 bytes, less than the new size of 50331648 bytes; no replica was grown$/,
      );
      const specs = await c.rest.call<Specs>('GET', '/specs');
      expect(specs.replicas.filter((r) => r.owners.volume === id).map((r) => r.size)).toEqual([
        16 * MiB,
        16 * MiB,
      ]);
      expect((await c.events()).some((e) => e.includes('"ResizeIncomplete"') && e.includes(id))).toBe(false);
      // Nor is a new thin volume larger than every pool but one placed on the small one.
      const big = (await c.rest
        .createVolume(newVolumeId(), {
          size: 48 * MiB,
          replicas: 2,
          thin: true,
          policy: { self_heal: false },
        })
        .catch((e: RestError) => e)) as RestError;
      expect(big.kind).toBe('ResourceExhausted');
      expect(big.message).toMatch(/pool smaller than the replica/);
      expect((await c.rest.resizeVolume(id, 40 * MiB)).spec.size).toBe(40 * MiB);
    }, 120_000);

    it('refuses to grow a thick volume a pool cannot hold before any replica grows', async () => {
      const { c, id } = await onSmallPool(false);
      // Another thick volume leaves 8 MiB free in the small pool: growing to 32 MiB needs 16 more.
      await c.rest.createVolume(newVolumeId(), {
        size: 16 * MiB,
        replicas: 1,
        thin: false,
        policy: { self_heal: false },
        topology: { node_topology: { explicit: { allowed_nodes: ['node-2'], preferred_nodes: [] } } },
      });
      const failed = (await c.rest.resizeVolume(id, 32 * MiB).catch((e: RestError) => e)) as RestError;
      expect(failed.kind).toBe('ResourceExhausted');
      expect(failed.message).toMatch(
        /not resized: pool 'pool-node-2' on node 'node-2' has \d+ bytes free, its replica needs 16777216 more .*; no replica was grown/,
      );
      const specs = await c.rest.call<Specs>('GET', '/specs');
      expect(specs.volumes.find((v) => v.uuid === id)).toMatchObject({ size: 16 * MiB });
      expect(specs.replicas.filter((r) => r.owners.volume === id).map((r) => r.size)).toEqual([
        16 * MiB,
        16 * MiB,
      ]);
      expect((await c.events()).some((e) => e.includes('"ResizeIncomplete"') && e.includes(id))).toBe(false);
      // A size the small pool holds grows both.
      expect((await c.rest.resizeVolume(id, 24 * MiB)).spec.size).toBe(24 * MiB);
    }, 120_000);
  });
