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
});
