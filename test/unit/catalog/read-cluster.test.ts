import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aboutVolume, readCluster } from '../../../src/lib/catalog/cluster.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { seed, smallCluster, space, volumeId } from '../dashboard/fixture.js';

const TYPES = ['VolumeSpec', 'ReplicaSpec', 'PoolSpec', 'NexusInfo', 'SwitchOver'] as const;

describe('reading the store for a page about one volume (real embedded store)', () => {
  let dir: string;
  let store: Store;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-read-cluster-'));
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    await seed(store, smallCluster());
    // Another volume whose stored value does not decode.
    await store.put(objectKey(space, 'VolumeSpec', volumeId(9)), '{"uuid":"not json enough"}');
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('decodes everything of the volume and nothing of the others but the unrelated types', async () => {
    const all = await readCluster(store, space, TYPES);
    const one = await readCluster(store, space, TYPES, aboutVolume(volumeId(1)));
    const ownedBy = (s: typeof all, id: string) =>
      [...(s.specs.ReplicaSpec?.values() ?? [])].filter((r) => r.owners.volume === id).map((r) => r.uuid);

    expect([...(one.specs.VolumeSpec?.keys() ?? [])]).toEqual([volumeId(1)]);
    expect(ownedBy(one, volumeId(1))).toEqual(ownedBy(all, volumeId(1)));
    expect(ownedBy(one, volumeId(1))).toHaveLength(2);
    expect(one.specs.ReplicaSpec?.size).toBe(2);
    expect(one.nexusInfo.get(volumeId(1))).toEqual(all.nexusInfo.get(volumeId(1)));
    expect(one.nexusInfo.has(volumeId(2))).toBe(false);
    expect(one.specs.SwitchOver?.get(volumeId(1))).toEqual(all.specs.SwitchOver?.get(volumeId(1)));
    // Pools belong to no volume: read whole.
    expect(one.specs.PoolSpec).toEqual(all.specs.PoolSpec);
    // The other volume's undecodable value is that volume's problem, reported by listings of it.
    expect(all.errors).toHaveLength(1);
    expect(one.errors).toHaveLength(0);
    expect((await readCluster(store, space, TYPES, aboutVolume(volumeId(9)))).errors).toHaveLength(1);
  });

  it('any of several ids: a node page reads the replicas that name one of its pools', async () => {
    const all = await readCluster(store, space, ['ReplicaSpec']);
    const some = await readCluster(store, space, ['ReplicaSpec'], {
      ids: ['pool-2', 'pool-9'],
      types: ['ReplicaSpec'],
    });
    const inPool2 = [...(all.specs.ReplicaSpec?.values() ?? [])].filter((r) => r.pool === 'pool-2');
    expect(inPool2).toHaveLength(2);
    expect([...(some.specs.ReplicaSpec?.values() ?? [])]).toEqual(inPool2);
  });
});
