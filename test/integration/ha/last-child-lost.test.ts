import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { waitFor } from '../../helpers/wait.js';
import type { TestCluster } from '../core/cluster.js';
import { HaRig } from './fixture.js';
import { DurableWriter } from './writer.js';

const MiB = 1024 * 1024;

/**
 * The target's last healthy child is remote, and its io-engine dies (kill -9): the replica is
 * intact, only unreachable. The nexus shuts itself down instead of failing the application's
 * writes: the path proxy holds them, HA moves the target once the replica's io-engine is back,
 * and the application sees a pause, not an I/O error.
 */
describe('the connection to the last healthy child is lost', () => {
  let rig: HaRig;
  let cluster: TestCluster;

  beforeAll(async () => {
    rig = await HaRig.start({ engines: 2 });
    cluster = rig.cluster;
  }, 120_000);

  afterAll(() => rig?.stop(), 120_000);

  it('holds the writes until its io-engine is back, and loses none', { timeout: 180_000 }, async () => {
    // One replica, on node-2; the target on node-1.
    const id = randomUUID();
    await cluster.rest.cordonNode('node-1', 'placement');
    try {
      await cluster.rest.createVolume(id, {
        size: 32 * MiB,
        replicas: 1,
        thin: true,
        policy: { self_heal: true },
      });
    } finally {
      await cluster.rest.uncordonNode('node-1', 'placement');
    }
    const v = await cluster.rest.publishVolume(id, {
      protocol: 'nbd',
      publish_context: {},
      node: 'node-1',
      frontend_node: 'csi-node-1',
    });
    expect(Object.values(v.state.replica_topology).map((r) => r.node)).toEqual(['node-2']);
    await rig.healthy(id, 1);
    const writer = new DurableWriter(
      join(await rig.stage({ id, uri: v.state.target!.deviceUri }), 'data.bin'),
    );
    writer.start();
    await waitFor(() => writer.acked >= 20 || writer.errors.length > 0, { what: 'the writer under way' });

    const engine = cluster.engine('node-2');
    await engine.proc.kill('SIGKILL');
    const ackedAtKill = writer.acked;
    // The nexus has nothing to write to: it shuts down (and HA's republish then removes it).
    const node1 = new IoEngineClient(cluster.engine('node-1').grpc);
    try {
      await waitFor(
        async () => {
          const n = await node1.getNexus(v.state.target!.uuid).catch(() => null);
          return !n || n.state === 'Shutdown' || writer.errors.length > 0;
        },
        { what: 'the nexus shut down', timeoutMs: 30_000 },
      );
    } finally {
      node1.close();
    }
    expect(writer.errors).toEqual([]);
    await cluster.startEngine('node-2', { grpc: engine.grpc, nbd: engine.nbd });
    await waitFor(() => writer.acked >= ackedAtKill + 50 || writer.errors.length > 0, {
      what: 'writes to go on once the replica is back',
      timeoutMs: 90_000,
    });
    await writer.stop();
    expect(writer.errors).toEqual([]);
    const { checked, bad } = await writer.verify();
    expect(bad).toEqual([]);
    expect(checked).toBeGreaterThan(ackedAtKill);
    expect((await cluster.rest.getVolume(id)).state.target?.uuid).not.toBe(v.state.target!.uuid);
  });
});
