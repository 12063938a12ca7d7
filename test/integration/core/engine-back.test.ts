import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { FAST_CORE_FLAGS, newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;
/** How long the io-engine stays down: long enough for a gRPC channel's reconnect backoff to grow past a few seconds. */
const OUTAGE_MS = 10_000;

/**
 * An io-engine that was down for a while is usable by core the moment it is back. gRPC clients
 * share connections (subchannels) per address by default, so core's new client for the restarted
 * io-engine inherited the old one's connection, still backing off from the attempts that failed
 * while the process was gone, and every call failed at once ("No connection established") until
 * the backoff's next attempt, seconds to two minutes later.
 */
describe('an io-engine back after an outage', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 3, coreFlags: FAST_CORE_FLAGS });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  const online = async (node: string) => (await c.rest.getNode(node)).state?.status === 'Online';

  it('answers core as soon as core sees it online again', async () => {
    const engine = c.engine('node-3');
    await engine.proc.kill('SIGKILL');
    await waitFor(async () => !(await online('node-3')), { what: 'node-3 offline' });
    await sleep(OUTAGE_MS); // the outage itself, not a wait for a condition
    await c.startEngine('node-3', { grpc: engine.grpc, nbd: engine.nbd });
    await waitFor(() => online('node-3'), { what: 'node-3 online again' });
    // Core asks the io-engine itself for these.
    const devices = await c.rest.call<unknown[]>('GET', '/nodes/node-3/block_devices');
    expect(Array.isArray(devices)).toBe(true);
    // Three replicas on three nodes, once its pool is back: no other pool can stand in for node-3's.
    await waitFor(
      async () => (await c.rest.listPools()).find((p) => p.id === 'pool-node-3')?.state?.status === 'Online',
      { what: 'pool-node-3 imported again' },
    );
    const v = await c.rest.createVolume(newVolumeId(), {
      size: 8 * MiB,
      replicas: 3,
      thin: true,
      policy: { self_heal: false },
    });
    expect(Object.values(v.state.replica_topology).map((r) => r.node)).toContain('node-3');
  }, 120_000);
});
