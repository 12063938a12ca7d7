import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/**
 * A replica whose child was faulted (its io-engine died while writes went on) is stale even once its
 * node is back. Scale-down must drop it, not the replica with the latest data (the volume could not
 * be published again: its NexusInfo names the dropped one as the only healthy replica), and a
 * snapshot must not take it (a clone made from its snapshot would serve the old data).
 */
describe('a volume with a stale replica', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 3 });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  /**
   * An unpublished 2-replica volume whose `stale` replica holds 0x11 and `current` one 0x22 (the
   * latest) over its first 4 MiB; both online. `stale` is the later id: with everything else equal,
   * ids decide the order replicas are picked in, so an id-ordered choice picks `current` first.
   */
  async function volumeWithStaleReplica() {
    const id = newVolumeId();
    const created = await c.rest.createVolume(id, {
      size: 16 * MiB,
      replicas: 2,
      thin: true,
      policy: { self_heal: false },
    });
    const nodeOf = Object.fromEntries(
      Object.entries(created.state.replica_topology).map(([uuid, r]) => [uuid, r.node!]),
    );
    const [current, stale] = Object.keys(nodeOf).sort();
    const published = await c.rest.publishVolume(id, {
      protocol: 'nbd',
      publish_context: {},
      node: nodeOf[current],
    });
    const uri = published.state.target!.deviceUri;
    await qemuIo(uri, 'write -P 0x11 0 4M');
    // The stale replica's io-engine dies; the next writes fault its child and reach only the other.
    const engine = c.engine(nodeOf[stale]);
    engine.proc.child.kill('SIGKILL');
    await engine.proc.wait();
    await qemuIo(uri, 'write -P 0x22 0 4M');
    await c.volumeWhere(
      id,
      (v) => v.state.target?.children.find((ch) => ch.uri.includes(stale))?.state === 'Faulted',
      { what: 'the stale child Faulted' },
    );
    await c.rest.unpublishVolume(id);
    // Its node comes back: the replica is online again, with the old data.
    await c.startEngine(nodeOf[stale], { grpc: engine.grpc, nbd: engine.nbd });
    await c.volumeWhere(id, (v) => v.state.replica_topology[stale]?.state === 'Online', {
      what: 'the stale replica online again',
      timeoutMs: 30_000,
    });
    return { id, current, stale };
  }

  it('scale-down drops the stale replica, never the one with the latest data', async () => {
    const { id, current } = await volumeWithStaleReplica();
    const scaled = await c.rest.scaleVolume(id, 1);
    expect(scaled.spec.num_replicas).toBe(1);
    expect(Object.keys((await c.rest.getVolume(id)).state.replica_topology)).toEqual([current]);
    const again = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
    await qemuIo(again.state.target!.deviceUri, 'read -P 0x22 0 4M');
    await c.rest.unpublishVolume(id);
    await c.rest.deleteVolume(id);
  }, 90_000);

  it('a snapshot takes only the replica with the latest data, and a clone of it serves that data', async () => {
    const { id, current } = await volumeWithStaleReplica();
    const snapId = newVolumeId();
    const snap = await c.rest.createSnapshot(id, snapId);
    const { transactions } = snap.definition.metadata as unknown as {
      transactions: Record<string, { source_id: string }[]>;
    };
    const records = Object.values(transactions).flat();
    expect(records.map((r) => r.source_id)).toEqual([current]);
    const cloneId = newVolumeId();
    await c.rest.call('PUT', `/snapshots/${snapId}/volumes/${cloneId}`, {
      size: 16 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const clone = await c.rest.publishVolume(cloneId, { protocol: 'nbd', publish_context: {} });
    await qemuIo(clone.state.target!.deviceUri, 'read -P 0x22 0 4M');
    await c.rest.unpublishVolume(cloneId);
    await c.rest.deleteVolume(cloneId);
    await c.rest.deleteSnapshot(snapId);
    await c.rest.deleteVolume(id);
  }, 90_000);
});

/** Node deadline of this suite: long enough to bring a killed io-engine back before it passes. */
const DEADLINE_MS = 6000;

describe('self-heal of an unpublished volume whose current replica is on a lost node', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({
      engines: 3,
      coreFlags: coreFlags({ '--node-deadline': `${DEADLINE_MS}ms` }),
    });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('keeps the lost replica that holds the latest data instead of replacing it', async () => {
    const id = newVolumeId();
    const created = await c.rest.createVolume(id, {
      size: 16 * MiB,
      replicas: 2,
      thin: true,
      policy: { self_heal: true },
    });
    const [[current, currentNode], [stale, staleNode]] = Object.entries(created.state.replica_topology).map(
      ([uuid, r]) => [uuid, r.node!],
    );
    const published = await c.rest.publishVolume(id, {
      protocol: 'nbd',
      publish_context: {},
      node: currentNode,
    });
    const uri = published.state.target!.deviceUri;
    await qemuIo(uri, 'write -P 0x11 0 4M');
    // `stale` misses writes while its io-engine is down, and is back well within the node deadline.
    const staleEngine = c.engine(staleNode);
    staleEngine.proc.child.kill('SIGKILL');
    await staleEngine.proc.wait();
    await qemuIo(uri, 'write -P 0x22 0 4M');
    await c.rest.unpublishVolume(id);
    await c.startEngine(staleNode, { grpc: staleEngine.grpc, nbd: staleEngine.nbd });
    await c.volumeWhere(id, (v) => v.state.replica_topology[stale]?.state === 'Online', {
      what: 'the stale replica online again',
    });

    // Now the node of the one current replica goes, past the deadline and a few self-heal passes.
    const currentEngine = c.engine(currentNode);
    currentEngine.proc.child.kill('SIGKILL');
    await currentEngine.proc.wait();
    await waitFor(async () => (await c.rest.getNode(currentNode)).state?.status === 'Offline', {
      what: `${currentNode} offline`,
    });
    const offlineAt = Date.now();
    const url = metricsUrl(c.cores[0])!;
    const passes = () => reconcilerRuns(url, 'self-heal');
    let before = Number.POSITIVE_INFINITY;
    await waitFor(
      async () => {
        if (Date.now() - offlineAt < DEADLINE_MS + 1000) return false;
        if (before === Number.POSITIVE_INFINITY) before = await passes();
        return (await passes()) >= before + 2;
      },
      { what: 'self-heal passes after the node deadline', timeoutMs: 30_000 },
    );
    // Kept: the stale replica is not all that is left of the volume's data.
    expect(Object.keys((await c.rest.getVolume(id)).state.replica_topology).sort()).toEqual(
      [current, stale].sort(),
    );
    await c.startEngine(currentNode, { grpc: currentEngine.grpc, nbd: currentEngine.nbd });
    const again = await waitFor(
      () => c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} }).catch(() => null),
      { what: 'the volume published again' },
    );
    await qemuIo(again.state.target!.deviceUri, 'read -P 0x22 0 4M');
    await c.rest.unpublishVolume(id);
    await c.rest.deleteVolume(id);
  }, 120_000);
});
