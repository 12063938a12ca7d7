import { rename } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

/**
 * What a pool holds follows the operations on it at once: `get pools`, CSI GetCapacity and replica
 * placement read core's pool state, which otherwise changes only at the next poll (here an hour).
 */
describe('pool state after replica operations', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 2, coreFlags: coreFlags({ '--cache-period': '1h' }) });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  const used = async (pool: string) => (await c.rest.listPools()).find((p) => p.id === pool)?.state?.used;

  it('a thick replica made, grown and destroyed shows in its pool without waiting for a poll', async () => {
    const id = newVolumeId();
    const created = await c.rest.createVolume(id, {
      size: 32 * MiB,
      replicas: 1,
      thin: false,
      policy: { self_heal: false },
    });
    const pool = Object.values(created.state.replica_topology)[0].pool!;
    await waitFor(async () => ((await used(pool)) ?? 0) >= 32 * MiB, { what: `${pool} using 32 MiB` });
    await c.rest.resizeVolume(id, 48 * MiB);
    await waitFor(async () => ((await used(pool)) ?? 0) >= 48 * MiB, { what: `${pool} using 48 MiB` });
    await c.rest.deleteVolume(id);
    await waitFor(async () => ((await used(pool)) ?? Number.POSITIVE_INFINITY) < MiB, {
      what: `${pool} empty again`,
    });
    expect(await used(pool)).toBeLessThan(MiB);
  });

  it('a restarted io-engine: its pool re-imported, the replicas on it are seen at once', async () => {
    const id = newVolumeId();
    const created = await c.rest.createVolume(id, {
      size: 16 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const { node, pool } = Object.values(created.state.replica_topology)[0];
    const imported = async () =>
      (await c.events()).filter((e) => e.includes('"Imported"') && e.includes(`"${pool}"`)).length;
    const importsBefore = await imported();
    const engine = c.engine(node!);
    engine.proc.child.kill('SIGKILL');
    await engine.proc.wait();
    await c.startEngine(node!, { grpc: engine.grpc, nbd: engine.nbd });
    await waitFor(async () => (await imported()) > importsBefore, { what: `${pool} re-imported` });
    // Online without a poll (an hour away): not Faulted for want of the replicas the import brought.
    await waitFor(async () => (await c.rest.getVolume(id)).state.status === 'Online', {
      what: 'the volume Online again',
      timeoutMs: 10_000,
    });
    await c.rest.deleteVolume(id);
  });

  it("a restarted io-engine's pool does not read Online from before the restart while it cannot be imported", async () => {
    const engine = c.engine('node-2');
    const pool = 'pool-node-2';
    const disk = (await c.rest.listPools()).find((p) => p.id === pool)!.spec!.disks[0];
    engine.proc.child.kill('SIGKILL');
    await engine.proc.wait();
    await waitFor(async () => (await c.rest.getNode('node-2')).state.status === 'Offline', {
      what: 'node-2 offline',
    });
    // Its disk is gone: the restarted io-engine cannot import the pool again.
    await rename(disk, `${disk}.gone`);
    try {
      const seen = new Set<string>();
      let watching = true;
      const watch = (async () => {
        while (watching)
          seen.add((await c.rest.listPools()).find((p) => p.id === pool)?.state?.status ?? 'none');
      })();
      await c.startEngine('node-2', { grpc: engine.grpc, nbd: engine.nbd });
      await waitFor(
        async () => (await c.events()).some((e) => e.includes('"ImportFailed"') && e.includes(`"${pool}"`)),
        { what: `${pool} import failed` },
      );
      watching = false;
      await watch;
      // The state it had before its io-engine was killed was Online: it must not be shown again.
      expect([...seen]).not.toContain('Online');
    } finally {
      await rename(`${disk}.gone`, disk);
    }
    await waitFor(
      async () => (await c.rest.listPools()).find((p) => p.id === pool)?.state?.status === 'Online',
      { what: `${pool} imported once its disk is back`, timeoutMs: 30_000 },
    );
  });
});
