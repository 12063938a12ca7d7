import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import type { RestError } from '../../../src/lib/rest/errors.js';
import { coreFlags, newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

interface Specs {
  volumes: { uuid: string }[];
  replicas: { uuid: string; pool: unknown; owners: { volume: string | null } }[];
}

/**
 * A create whose replica cannot be made on the pool placement chose (here: node-3's pool, exported
 * behind core's back, as after an io-engine restart before the pool is re-imported) places that
 * replica on another pool while one is left, and says which pool it skipped and why. Core does not
 * poll meanwhile (--cache-period 1h), so placement keeps offering the pool that is gone.
 */
describe('a replica whose pool fails its create', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 3, coreFlags: coreFlags({ '--cache-period': '1h' }) });
    const node3 = new IoEngineClient(c.engine('node-3').grpc);
    try {
      await node3.exportPool('pool-node-3');
    } finally {
      node3.close();
    }
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  /** node-3 first, so placement chooses its pool for one of the replicas. */
  const onNode3First = (replicas: number) => ({
    size: 8 * MiB,
    replicas,
    thin: true,
    policy: { self_heal: false },
    topology: {
      node_topology: {
        explicit: { allowed_nodes: ['node-1', 'node-2', 'node-3'], preferred_nodes: ['node-3'] },
      },
    },
  });
  const specs = () => c.rest.call<Specs>('GET', '/specs');
  const poolsOf = async (volume: string) =>
    (await specs()).replicas
      .filter((r) => r.owners.volume === volume)
      .map((r) => JSON.stringify(r.pool))
      .sort();

  it('goes to another pool, and the Created event names the pool it skipped', async () => {
    const id = newVolumeId();
    const v = await c.rest.createVolume(id, onNode3First(2));
    const nodes = Object.values(v.state.replica_topology)
      .map((r) => r.node)
      .sort();
    expect(nodes).toEqual(['node-1', 'node-2']);
    expect(v.state.status).toBe('Online');
    expect(await poolsOf(id)).toEqual(['"pool-node-1"', '"pool-node-2"']);
    const created = (await c.events())
      .map((e) => JSON.parse(e))
      .find((e) => e.action === 'Created' && e.id === id);
    expect(created?.message).toMatch(
      /on node-\d, node-\d \(skipped pool-node-3: .*pool 'pool-node-3' not found/,
    );
  });

  /** The replicas node-1's and node-2's io-engines hold, asked of them (not core's specs). */
  const onEngines = async () => {
    const uuids: string[] = [];
    for (const node of ['node-1', 'node-2']) {
      const engine = new IoEngineClient(c.engine(node).grpc);
      try {
        uuids.push(...(await engine.listReplicas()).map((r) => r.uuid));
      } finally {
        engine.close();
      }
    }
    return uuids.sort();
  };

  it('fails as Unavailable when no other pool is left, and leaves nothing behind', async () => {
    const id = newVolumeId();
    const before = await onEngines();
    const failed = (await c.rest.createVolume(id, onNode3First(3)).catch((e: RestError) => e)) as RestError;
    expect({ kind: failed.kind, message: failed.message }).toMatchObject({
      kind: 'Unavailable',
      message: expect.stringContaining("pool 'pool-node-3' not found"),
    });
    expect((await specs()).volumes.map((v) => v.uuid)).not.toContain(id);
    expect(await poolsOf(id)).toEqual([]);
    // The replicas made on node-1 and node-2 were destroyed again.
    expect(await onEngines()).toEqual(before);
  });
});
