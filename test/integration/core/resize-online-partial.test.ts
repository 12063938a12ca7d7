import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { RestError } from '../../../src/lib/rest/errors.js';
import { type Backend, newVolumeId, POOL_CAPACITY, TestCluster } from './cluster.js';
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
      cluster = await TestCluster.start({ backend, engines: 3, pools: false });
      const c = cluster;
      for (const node of ['node-1', 'node-2']) await c.createNodePool(node, POOL_CAPACITY);
      const id = newVolumeId();
      const published = await c.createPublished(id, { size: 16 * MiB, replicas: 2, node: 'node-1' });
      const uri = published.state.target!.deviceUri;
      await qemuIo(uri, 'write -P 0x3c 0 8M');
      // The third replica (the last one the resize grows) lands on a 40 MiB pool.
      await c.createNodePool('node-3', 40 * MiB);
      await c.scaleToHealthy(id, 3);

      const failed = (await c.rest.resizeVolume(id, 48 * MiB).catch((e: RestError) => e)) as RestError;
      expect(failed.kind).toBe('ResourceExhausted');
      expect(failed.message).toMatch(/pool-node-3/);
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

      // A size the small pool can hold completes the resize; the larger replicas stay as they are.
      const done = await c.rest.resizeVolume(id, 32 * MiB);
      expect(done.spec.size).toBe(32 * MiB);
      specs = await c.rest.call<Specs>('GET', '/specs');
      expect(sizeOf(specs)).toEqual([
        { node3: false, size: 48 * MiB, op: null },
        { node3: false, size: 48 * MiB, op: null },
        { node3: true, size: 32 * MiB, op: null },
      ]);
      expect(specs.nexuses.find((n) => n.owner === id)?.size).toBe(32 * MiB);
      expect(await nbdSize(uri)).toBe(32 * MiB);
      await qemuIo(uri, 'write -P 0x5e 30M 2M');
      await qemuIo(uri, 'read -P 0x3c 0 8M', 'read -P 0x4d 15M 1M', 'read -P 0x5e 30M 2M');
    }, 120_000);

    it('refuses to grow a thick volume a pool cannot hold before any replica grows', async () => {
      cluster = await TestCluster.start({ backend, engines: 2, pools: false });
      const c = cluster;
      await c.createNodePool('node-1', POOL_CAPACITY);
      await c.createNodePool('node-2', 40 * MiB);
      const id = newVolumeId();
      await c.rest.createVolume(id, {
        size: 16 * MiB,
        replicas: 2,
        thin: false,
        policy: { self_heal: false },
      });
      // 24 MiB are left in the small pool: growing to 48 MiB needs 32 more there.
      const failed = (await c.rest.resizeVolume(id, 48 * MiB).catch((e: RestError) => e)) as RestError;
      expect(failed.kind).toBe('ResourceExhausted');
      expect(failed.message).toMatch(
        /not resized: pool 'pool-node-2' on node 'node-2' has \d+ bytes free, its replica needs 33554432 more .*; no replica was grown/,
      );
      const specs = await c.rest.call<Specs>('GET', '/specs');
      expect(specs.volumes.find((v) => v.uuid === id)).toMatchObject({ size: 16 * MiB });
      expect(specs.replicas.filter((r) => r.owners.volume === id).map((r) => r.size)).toEqual([
        16 * MiB,
        16 * MiB,
      ]);
      expect((await c.events()).some((e) => e.includes('"ResizeIncomplete"') && e.includes(id))).toBe(false);
      // A size the small pool holds grows both.
      expect((await c.rest.resizeVolume(id, 32 * MiB)).spec.size).toBe(32 * MiB);
    }, 120_000);
  });
