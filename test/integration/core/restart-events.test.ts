import { rename } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

/**
 * A cluster restarted as a whole (`storctl up` again: core and every io-engine) tells the truth in
 * its events: a volume that was healthy is not reported Faulted while core has not yet re-imported
 * the pools that hold its replicas.
 */
describe('events after a whole-cluster restart', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 2 });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  /** Core stopped, every io-engine killed, then all started again on the same ports and disks. */
  const restartAll = async (whileDown?: () => Promise<void>) => {
    await c.cores.at(-1)!.kill('SIGTERM');
    const engines = [...c.engines];
    for (const e of engines) {
      e.proc.child.kill('SIGKILL');
      await e.proc.wait();
    }
    await whileDown?.();
    for (const e of engines) await c.startEngine(e.node, { grpc: e.grpc, nbd: e.nbd });
    await c.startCore();
  };

  it('records no Faulted for a healthy unpublished volume while its pools are re-imported', async () => {
    const id = newVolumeId();
    await c.rest.createVolume(id, { size: 8 * MiB, replicas: 2, thin: true, policy: { self_heal: false } });
    const eventsOf = async () => (await c.events()).filter((e) => e.includes(`"id":"${id}"`));
    const before = (await eventsOf()).length;

    await restartAll();
    await waitFor(async () => (await c.rest.getVolume(id)).state.status === 'Online', {
      what: 'the volume Online after the restart',
    });
    // Whatever core recorded on its way to Online is in the store by now.
    const imported = (await c.events()).filter((e) => e.includes('"action":"Imported"')).length;
    expect(imported).toBe(2);
    expect((await eventsOf()).slice(before)).toEqual([]);
    await c.rest.deleteVolume(id);
  }, 90_000);

  it('still reports Faulted a volume whose only pool cannot be imported again', async () => {
    const id = newVolumeId();
    const v = await c.rest.createVolume(id, {
      size: 8 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const poolId = Object.values(v.state.replica_topology)[0].pool!;
    const disk = (await c.rest.listPools()).find((p) => p.id === poolId)!.spec!.disks[0];
    await restartAll(() => rename(disk, `${disk}.away`));
    try {
      await waitFor(
        async () =>
          (await c.events()).some((e) => e.includes(`"id":"${id}","action":"Faulted"`)) &&
          (await c.rest.getVolume(id)).state.status === 'Faulted',
        { what: 'the volume reported Faulted' },
      );
    } finally {
      await rename(`${disk}.away`, disk);
    }
  }, 90_000);
});
