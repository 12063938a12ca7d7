import { afterEach, describe, expect, it } from 'vitest';
import type { RestError } from '../../../src/lib/rest/errors.js';
import type { Volume } from '../../../src/lib/rest/types.js';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, POOL_CAPACITY, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

const childOf = (v: Volume, uuid: string) => v.state.target?.children.find((ch) => ch.uri.includes(uuid));

/**
 * A thin 1-replica volume of `mib` MiB on `node`'s pool (retried until core knows that pool),
 * written in full there, unpublished: what fills the pool. Its id.
 */
async function fillPool(c: TestCluster, node: string, mib: number): Promise<string> {
  const id = newVolumeId();
  await waitFor(
    () =>
      c.rest
        .createVolume(id, {
          size: mib * MiB,
          replicas: 1,
          thin: true,
          policy: { self_heal: false },
          topology: { node_topology: { explicit: { allowed_nodes: [node], preferred_nodes: [] } } },
        })
        .then(() => true)
        .catch(() => null),
    { what: `core knows ${node}'s pool` },
  );
  const uri = (await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node })).state.target!
    .deviceUri;
  await qemuIo(uri, `write -P 0x11 0 ${mib}M`);
  await c.rest.unpublishVolume(id);
  return id;
}

/**
 * A replica whose pool filled up (its writes failed with ENOSPC) is waited for like any faulted
 * child, but not added back while its pool is full (its rebuild would fail as its writes did), as
 * Mayastor's ENOSPC children wait; once space is freed in the pool it returns with a partial rebuild.
 */
describe('a volume whose replica ran out of pool space', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it('keeps serving Degraded, keeps the replica while its pool is full, and brings it back once there is room', async () => {
    cluster = await TestCluster.start({
      engines: 2,
      pools: false,
      coreFlags: [
        ...coreFlags({ '--faulted-child-wait-period': '1h', '--node-deadline': '600s' }),
        '--metrics-address',
        '127.0.0.1:0',
      ],
    });
    const c = cluster;
    await c.createNodePool('node-1', POOL_CAPACITY);
    await c.createNodePool('node-2', 40 * MiB);
    // A thin volume fills most of node-2's pool.
    const filler = await fillPool(c, 'node-2', 28);

    const id = newVolumeId();
    await c.rest.createVolume(id, { size: 16 * MiB, replicas: 2, thin: true, policy: { self_heal: true } });
    const published = await c.rest.publishVolume(id, {
      protocol: 'nbd',
      publish_context: {},
      node: 'node-1',
    });
    const uri = published.state.target!.deviceUri;
    const victim = Object.entries(published.state.replica_topology).find(([, r]) => r.node === 'node-2')![0];
    // 28 + 16 MiB do not fit node-2's 40: its child fails with ENOSPC, node-1's takes every write.
    await qemuIo(uri, 'write -P 0x22 0 16M', 'read -P 0x22 0 16M');
    const degraded = await waitFor(
      async () => {
        const v = await c.rest.getVolume(id);
        return v.state.status === 'Degraded' && childOf(v, victim)?.state === 'Faulted' ? v : null;
      },
      { what: 'the child on the full pool faulted' },
    );
    expect(Object.keys(degraded.state.replica_topology)).toContain(victim);

    // Core waits for it (an event says so) and, over further reconcile passes, does not add it back.
    await waitFor(
      async () => (await c.events()).some((e) => e.includes('"WaitingForChild"') && e.includes(victim)),
      { what: 'the WaitingForChild event' },
    );
    const metrics = metricsUrl(c.cores[0])!;
    const passes = () => reconcilerRuns(metrics, 'pass');
    const seen = await passes();
    await waitFor(async () => (await passes()) >= seen + 3, { what: 'three more reconcile passes' });
    const waiting = await c.rest.getVolume(id);
    expect(childOf(waiting, victim)?.state).toBe('Faulted');
    const events = await c.events();
    expect(events.some((e) => e.includes('"Rebuilding"') && e.includes(victim))).toBe(false);
    // It says why, once: the pool is full, and what to do.
    const said = events.filter((e) => e.includes('"PoolFull"') && e.includes(victim));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(
      /its pool pool-node-2 on node-2 is full \(\d+ of 41943040 bytes free\).*free space in that pool/,
    );
    // The pool's own event says it filled up (what a 1-replica volume there, kept Online, shows), once.
    await waitFor(
      async () =>
        (await c.events()).some(
          (e) => e.includes('"Full"') && e.includes('pool pool-node-2 on node-2 is full'),
        ),
      { what: 'the pool Full event' },
    );
    expect(
      (await c.events()).filter(
        (e) => e.includes('"Full"') && e.includes('pool pool-node-2 on node-2 is full'),
      ),
    ).toHaveLength(1);

    // Room again in node-2's pool: the same replica comes back and is rebuilt; the data is whole.
    await c.rest.deleteVolume(filler);
    const healed = await waitFor(
      async () => {
        const v = await c.rest.getVolume(id);
        return v.state.status === 'Online' && childOf(v, victim)?.state === 'Online' ? v : null;
      },
      { what: 'the replica back and rebuilt', timeoutMs: 60_000 },
    );
    expect(Object.keys(healed.state.replica_topology).sort()).toEqual(
      Object.keys(published.state.replica_topology).sort(),
    );
    await qemuIo(uri, 'read -P 0x22 0 16M');
    await waitFor(
      async () =>
        (await c.events()).some((e) => e.includes('"SpaceFreed"') && e.includes('pool pool-node-2 has')),
      {
        what: 'the pool SpaceFreed event',
      },
    );
  }, 120_000);
  it('places a new replica of a volume holding data only where its rebuild fits', async () => {
    cluster = await TestCluster.start({ engines: 3, pools: false });
    const c = cluster;
    for (const node of ['node-1', 'node-2']) await c.createNodePool(node, POOL_CAPACITY);
    const id = newVolumeId();
    const uri = (await c.createPublished(id, { size: 16 * MiB, replicas: 2, node: 'node-1' })).state.target!
      .deviceUri;
    await qemuIo(uri, 'write -P 0x33 0 12M');
    // node-3's pool has 10 MiB free: more than the 40% of 16 MiB a new thin replica needs, less
    // than the 12 MiB its rebuild would write.
    await c.createNodePool('node-3', 40 * MiB);
    const filler = await fillPool(c, 'node-3', 30);
    await waitFor(
      async () => {
        const [v, pools] = await Promise.all([c.rest.getVolume(id), c.rest.listPools()]);
        const node3 = pools.find((p) => p.id === 'pool-node-3')?.state;
        return (v.state.usage?.allocated ?? 0) >= 12 * MiB && (node3?.used ?? 0) >= 30 * MiB;
      },
      { what: "core sees what the volume and node-3's pool hold" },
    );
    const refused = (await c.rest.scaleVolume(id, 3).catch((e: RestError) => e)) as RestError;
    expect(refused.kind).toBe('ResourceExhausted');
    expect(refused.message).toMatch(/1 pool\(s\): not enough free space/);
    expect(Object.keys((await c.rest.getVolume(id)).state.replica_topology)).toHaveLength(2);

    // Room for the rebuild: the replica is placed there and rebuilt in full.
    await c.rest.deleteVolume(filler);
    await c.scaleToHealthy(id, 3);
    await qemuIo(uri, 'read -P 0x33 0 12M');
  }, 120_000);
});
