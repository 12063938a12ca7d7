import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/**
 * A republish (HA switchover, drain) tears the old target down before it builds the new one. When
 * the node it chose dies in between (its io-engine killed after core last saw it), the volume must
 * not be left without a target: HA gives up on a volume that is not published, and the
 * application's I/O would fail once its path timed out.
 */
describe('a target built while a node it needs has just died', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 3 });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('a republish whose chosen node died builds the target on the next usable node, and the data is there', async () => {
    const id = newVolumeId();
    const first = await c.createPublished(id, { size: 8 * MiB, replicas: 2, node: 'node-1', selfHeal: true });
    await qemuIo(first.state.target!.deviceUri, 'write -P 0x5a 0 1M');
    // The node a republish chooses: a replica's node other than the old target's, else any other.
    const replicaNodes = Object.values(first.state.replica_topology)
      .map((r) => r.node!)
      .filter((n) => n !== 'node-1')
      .sort();
    const victim = replicaNodes[0] ?? 'node-2';
    const { grpc, nbd } = c.engine(victim);
    await c.engine(victim).proc.kill('SIGKILL');
    try {
      const moved = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, republish: true });
      const node = moved.state.target?.node;
      expect(node).toBeDefined();
      expect(node).not.toBe(victim);
      const events = (await c.events()).map(
        (e) => JSON.parse(e) as { action: string; id: string; message: string },
      );
      const mine = events.filter((e) => e.id === id).map((e) => e.action);
      const since = mine.slice(mine.lastIndexOf('Unpublished'));
      expect(since).toContain('PublishFailed');
      expect(since.indexOf('Published')).toBeGreaterThan(since.indexOf('PublishFailed'));
      expect(events.find((e) => e.id === id && e.action === 'PublishFailed')?.message).toContain(
        `on node ${victim}`,
      );
      await qemuIo(moved.state.target!.deviceUri, 'read -P 0x5a 0 1M');
    } finally {
      await c.startEngine(victim, { grpc, nbd });
    }
    // Left out of the new nexus, the victim's replica is rebuilt into it once its node is back.
    await c.volumeWhere(id, (v) => v.state.status === 'Online' && v.state.target?.children.length === 2, {
      what: 'the left-out replica rebuilt into the target',
    });
  });

  it("a publish while a replica's node has just died serves from the other replicas", async () => {
    const id = newVolumeId();
    await c.rest.createVolume(id, { size: 8 * MiB, replicas: 3, thin: true, policy: { self_heal: true } });
    await c.engine('node-3').proc.kill('SIGKILL');
    const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
    expect(v.state.target?.node).toBe('node-1');
    expect(v.state.target?.children).toHaveLength(2);
    await qemuIo(v.state.target!.deviceUri, 'write -P 0x3c 0 1M', 'read -P 0x3c 0 1M');
  });
});
