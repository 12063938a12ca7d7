import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStorctl } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, POOL_CAPACITY, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/**
 * The io-engines restart (a reboot) and one pool does not come back: its disk is gone. The volume
 * with a replica there keeps a target on its other replica, the events and `get pools` say which
 * pool and why, and the lost replica is replaced once the faulted-child wait is over.
 */
describe('a restart where one pool does not come back', () => {
  let c: TestCluster;

  beforeAll(async () => {
    c = await TestCluster.start({
      engines: 3,
      pools: false,
      coreFlags: coreFlags({ '--faulted-child-wait-period': '3s' }),
    });
    for (const node of ['node-1', 'node-2']) await c.createNodePool(node, POOL_CAPACITY);
  }, 60_000);

  afterAll(async () => {
    await c?.stop();
  });

  it('serves the volume from its other replica, says why, and replaces the lost one', async () => {
    const id = newVolumeId();
    const published = await c.createPublished(id, {
      size: 16 * MiB,
      replicas: 2,
      node: 'node-1',
      thin: false,
      selfHeal: true,
    });
    const uri = published.state.target!.deviceUri;
    await qemuIo(uri, 'write -P 0x41 0 4M');
    // A volume whose only replica is on node-2: its target cannot come back.
    const only = newVolumeId();
    await c.rest.createVolume(only, {
      size: 16 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: true },
      topology: { node_topology: { explicit: { allowed_nodes: ['node-2'], preferred_nodes: [] } } },
    });
    await c.rest.publishVolume(only, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
    await c.createNodePool('node-3', POOL_CAPACITY); // room for the replacement

    const down = ['node-1', 'node-2'].map((n) => c.engine(n));
    for (const e of down) expect(await e.proc.kill('SIGTERM')).toBe(0);
    await rename(join(c.dir, 'node-2', 'pool'), join(c.dir, 'node-2', 'pool.gone'));
    const eventOf = (action: string, what: string) =>
      waitFor(async () => (await c.events()).find((e) => e.includes(`"${action}"`) && e.includes(what)), {
        what: `a ${action} event about ${what}`,
      });
    // node-2 is back first, without its pool; then the target's node.
    await c.startEngine('node-2', { grpc: down[1].grpc, nbd: down[1].nbd });
    expect(JSON.parse(await eventOf('ImportFailed', 'pool-node-2')).message).toMatch(
      /^not imported on node node-2 from .*: .*pool metadata.*; its replicas are unavailable/,
    );
    await c.startEngine('node-1', { grpc: down[0].grpc, nbd: down[0].nbd });
    // The target serves again, from the replica there is, before any replacement.
    expect(JSON.parse(await eventOf('Recreated', id)).message).toMatch(/from 1 healthy replica\(s\)$/);
    await qemuIo(uri, 'read -P 0x41 0 4M');
    const pools = await runStorctl(['get', 'pools'], { env: c.env });
    expect(pools.stdout).toMatch(/pool-node-2 .* node-2 +Unknown /);

    const healed = await c.volumeWhere(
      id,
      (v) =>
        v.state.status === 'Online' &&
        Object.values(v.state.replica_topology)
          .map((t) => t.node)
          .sort()
          .join() === 'node-1,node-3',
      { what: 'the lost replica replaced on node-3', timeoutMs: 30_000 },
    );
    expect(healed.spec.num_replicas).toBe(2);
    expect(JSON.parse(await eventOf('WaitingForChild', id)).message).toMatch(
      /: replica unavailable since \S+ \(its pool pool-node-2 was not imported: .+\); waiting until \S+ for it to come back before replacing it$/,
    );
    expect(JSON.parse(await eventOf('Removed', 'pool-node-2 was not imported')).message).toMatch(
      /not back within the faulted-child wait period; replacing it/,
    );
    await qemuIo(uri, 'read -P 0x41 0 4M');
    // describe tells the whole story, the replaced replica's removal included.
    const described = await runStorctl(['describe', 'volume', id], { env: c.env });
    expect(described.stdout).toMatch(/replica\/\S+ +Removed +from volume \S+: replica unavailable since/);
    // The other is said once (core tries every pass), with why.
    const failed = (await c.events()).filter((e) => e.includes('"RecreateFailed"') && e.includes(only));
    expect(failed).toHaveLength(1);
    expect(JSON.parse(failed[0]).message).toMatch(
      /^its target nexus was not recreated: .*No online replicas/,
    );
  }, 120_000);
});
