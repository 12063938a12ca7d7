import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import type { RestError } from '../../../src/lib/rest/errors.js';
import { waitFor } from '../../helpers/wait.js';
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
  replicas: { uuid: string; size: number; owners: { volume: string | null }; operation: unknown }[];
}

/**
 * core killed (-9) in the middle of an online resize, after two replicas grew and while the third
 * io-engine is stopped: at restart the pending Resize is rolled back (the volume keeps its size and
 * serves its data), and a later resize completes even to a size below what the grown replicas
 * already have (they cannot shrink; they are left larger and recorded at their real size).
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`core crash during an online resize (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    const clients: IoEngineClient[] = [];
    afterEach(async () => {
      for (const cl of clients.splice(0)) cl.close();
      for (const e of cluster?.engines ?? []) if (e.proc.running) e.proc.child.kill('SIGCONT');
      await cluster?.stop();
      cluster = undefined;
    });

    it('rolls back at restart; a later resize completes', async () => {
      cluster = await TestCluster.start({ backend, engines: 3, pools: false });
      const c = cluster;
      await c.createNodePool('node-1', POOL_CAPACITY);
      await c.createNodePool('node-2', POOL_CAPACITY);
      const id = newVolumeId();
      const published = await c.createPublished(id, { size: 16 * MiB, replicas: 2, node: 'node-1' });
      const uri = published.state.target!.deviceUri;
      await qemuIo(uri, 'write -P 0x2b 0 8M');
      // The third replica is the last one a resize grows.
      await c.createNodePool('node-3', POOL_CAPACITY);
      await c.scaleToHealthy(id, 3);

      const node3 = c.engine('node-3');
      node3.proc.child.kill('SIGSTOP');
      const pending = c.rest.resizeVolume(id, 32 * MiB).catch((e: Error) => e);
      const grownOn = ['node-1', 'node-2'].map((n) => {
        const cl = new IoEngineClient(c.engine(n).grpc);
        clients.push(cl);
        return cl;
      });
      await waitFor(
        async () => {
          for (const cl of grownOn) {
            const mine = (await cl.listReplicas()).filter((r) => r.size === 32 * MiB);
            if (mine.length !== 1) return false;
          }
          return true;
        },
        { what: 'replicas on node-1 and node-2 grown', timeoutMs: 10_000, intervalMs: 50 },
      );
      const core = c.cores[c.cores.length - 1];
      core.child.kill('SIGKILL');
      await core.wait();
      await pending;
      node3.proc.child.kill('SIGCONT');
      await c.startCore();

      const specs = await c.rest.call<Specs>('GET', '/specs');
      const vol = specs.volumes.find((v) => v.uuid === id)!;
      expect(vol.size).toBe(16 * MiB);
      expect(vol.operation ?? null).toBeNull();
      for (const r of specs.replicas.filter((x) => x.owners.volume === id))
        expect(r.operation ?? null).toBeNull();
      expect(
        (await c.events()).some((e) => e.includes('"Recovered"') && e.includes('Resize') && e.includes(id)),
      ).toBe(true);
      expect(await nbdSize(uri)).toBe(16 * MiB);
      await qemuIo(uri, 'read -P 0x2b 0 8M');

      // 24 MiB: below the 32 MiB the grown replicas have; they stay so, the rest grows.
      const done = await waitFor(
        async () =>
          c.rest
            .resizeVolume(id, 24 * MiB)
            .catch((e: RestError) =>
              ['FailedPrecondition', 'Unavailable'].includes(e.kind) ? null : Promise.reject(e),
            ),
        { what: 'resize after the restart', timeoutMs: 30_000, intervalMs: 500 },
      );
      expect(done.spec.size).toBe(24 * MiB);
      const after = await c.rest.call<Specs>('GET', '/specs');
      const sizes = after.replicas.filter((x) => x.owners.volume === id).map((r) => r.size);
      expect(sizes).toHaveLength(3);
      for (const s of sizes) expect(s).toBeGreaterThanOrEqual(24 * MiB);
      expect(sizes.filter((s) => s === 32 * MiB).length).toBeGreaterThanOrEqual(2);
      expect(await nbdSize(uri)).toBe(24 * MiB);
      await qemuIo(uri, 'write -P 0x3c 23M 1M');
      await qemuIo(uri, 'read -P 0x2b 0 8M', 'read -P 0x3c 23M 1M');
    }, 120_000);
  });
