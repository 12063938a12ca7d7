import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

/**
 * A store restored from a dump older than a volume (or rebuilt after a loss) does not know that
 * volume; its replica is still on its io-engine. Core says so and leaves it: destroying what no
 * spec names, a grace period after it started, turned a restore into losing every later volume.
 */
describe('a store that no longer knows a volume', () => {
  let c: TestCluster;

  beforeAll(async () => {
    c = await TestCluster.start({ engines: 1 });
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
  });

  it("leaves the volume's replica on its io-engine and says it is there", async () => {
    const id = newVolumeId();
    const v = await c.rest.createVolume(id, {
      size: 8 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const [replica] = Object.keys(v.state.replica_topology);
    expect(await c.cores[0].kill('SIGTERM')).toBe(0);
    // The store as a dump from before the volume would restore it.
    const store = await openStore(c.storeUrl);
    try {
      await store.delete(objectKey(c.space, 'VolumeSpec', id));
      await store.delete(objectKey(c.space, 'ReplicaSpec', replica));
    } finally {
      await store.close();
    }
    await c.startCore(); // its replica GC grace is 2 s (FAST_CORE_FLAGS)
    const said = await waitFor(
      async () => (await c.events()).find((e) => e.includes('"Orphaned"') && e.includes(replica)),
      { what: 'an Orphaned event for the replica no spec names' },
    );
    expect(JSON.parse(said).message).toMatch(/^replica on node node-1 that no spec names: left as it is/);
    const engine = new IoEngineClient(c.engine('node-1').grpc);
    try {
      expect((await engine.listReplicas()).map((r) => r.uuid)).toContain(replica);
    } finally {
      engine.close();
    }
  }, 60_000);
});
