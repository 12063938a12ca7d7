import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestError } from '../../../src/lib/rest/errors.js';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/**
 * A replica added to a volume that holds data is rebuilt with all of it: core places it only where
 * that fits, judged on what the pools and replicas hold now, not on a poll a cache period old (here
 * an hour). Placed on a stale view, the rebuild filled the pool, failed, and left the thin volume
 * already there without room for its writes. A self-heal that finds no such pool says so once.
 */
describe('room for a replica that is rebuilt', () => {
  let c: TestCluster;
  let a: string;
  let b: string;
  beforeAll(async () => {
    c = await TestCluster.start({
      engines: 3,
      poolCapacity: 64 * MiB,
      coreFlags: [...coreFlags({ '--cache-period': '1h' }), '--metrics-address', '127.0.0.1:0'],
    });
    const thin = (replicas: number) => ({
      size: 48 * MiB,
      replicas,
      thin: true,
      policy: { self_heal: true },
    });
    // B first, on node-3: A's two replicas then go to the emptier pools of node-1 and node-2.
    b = newVolumeId();
    await c.rest.createVolume(b, {
      ...thin(1),
      topology: { node_topology: { explicit: { allowed_nodes: ['node-3'], preferred_nodes: [] } } },
    });
    a = newVolumeId();
    const created = await c.rest.createVolume(a, thin(2));
    expect(Object.values(created.state.replica_topology).map((r) => r.node)).not.toContain('node-3');
    for (const [id, node] of [
      [b, 'node-3'],
      [a, 'node-1'],
    ]) {
      const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node });
      await qemuIo(v.state.target!.deviceUri, 'write -P 0x5b 0 40M');
    }
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('refuses a scale whose rebuild would not fit, and the volume already in that pool keeps its room', async () => {
    const refused = await c.rest.scaleVolume(a, 3).catch((e: RestError) => e);
    expect(refused).toBeInstanceOf(RestError);
    expect(refused).toMatchObject({ kind: 'ResourceExhausted' });
    expect((refused as RestError).message).toContain('1 pool(s): not enough free space');
    expect(Object.keys((await c.rest.getVolume(a)).state.replica_topology)).toHaveLength(2);
    const uri = (await c.rest.getVolume(b)).state.target!.deviceUri;
    await qemuIo(uri, 'write -P 0x5c 40M 8M'); // the rest of B
    await qemuIo(uri, 'read -P 0x5b 0 40M', 'read -P 0x5c 40M 8M');
  });

  it('says once, in an event and in its log, why a lost replica cannot be replaced', async () => {
    const core = c.cores.at(-1)!;
    const metrics = metricsUrl(core)!;
    const lost = c.engine('node-2');
    lost.proc.child.kill('SIGKILL');
    await lost.proc.wait();
    const healFailed = async () =>
      (await c.events()).filter((e) => e.includes(`"id":"${a}","action":"HealFailed"`));
    // node-2's replica is lost past the node deadline; node-3's pool has no room for what it held.
    const [said] = await waitFor(async () => ((await healFailed()).length ? healFailed() : null), {
      what: 'a HealFailed event',
    });
    expect(JSON.parse(said).message).toContain('not enough free space');
    const after = await reconcilerRuns(metrics, 'pass');
    await waitFor(async () => (await reconcilerRuns(metrics, 'pass')) >= after + 5, {
      what: 'five more passes',
    });
    expect(await healFailed()).toHaveLength(1);
    expect(core.output.split('\n').filter((l) => l.includes('self-heal step failed'))).toHaveLength(1);
  });
});

/**
 * `storctl volume scale` waits for the new replica's rebuild: one that fails is said at once, with
 * where to look, where it waited out its whole timeout (10 minutes) on a rebuild that had ended.
 */
describe('volume scale when the rebuild fails', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 2, poolCapacity: 64 * 1024 * MiB });
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('exits 4 naming the replica whose rebuild failed', async () => {
    const id = newVolumeId();
    // Thin and sparse: its rebuild reads 8 GiB of holes, seconds in which its node is killed.
    const v = await c.rest.createVolume(id, {
      size: 8 * 1024 * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const node = Object.values(v.state.replica_topology)[0].node!;
    const target = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node });
    await qemuIo(target.state.target!.deviceUri, 'write -P 0x6d 0 1M');
    const scale = new StorctlProcess(['volume', 'scale', id, '2'], c.env);
    await waitFor(async () => scale.output.includes('rebuilding 1 replica(s)') || scale.failIfExited(), {
      what: 'the scale to report the rebuild',
    });
    const added = Object.keys((await c.rest.getVolume(id)).state.replica_topology).find(
      (r) => !(r in v.state.replica_topology),
    )!;
    const other = c.engines.find((e) => e.node !== node)!;
    other.proc.child.kill('SIGKILL');
    expect(await scale.wait()).toBe(4);
    expect(scale.output).toContain(`the rebuild of its new replica ${added} failed`);
    expect(scale.output).toContain(`storctl events --id ${id}`);
  }, 60_000);
});
