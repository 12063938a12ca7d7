import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

/** libfaketime (Debian's libfaketime, which .ci/install-deps installs): it steps the daemons' wall clock. */
const FAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
].find((f) => existsSync(f));

/**
 * The wall clock of every daemon steps (NTP correcting it, a VM resumed): leases are timed on the
 * machine's monotonic clock, so a step neither ends the leases that are kept alive (core restarted
 * and every node read offline on a step forward) nor keeps a dead process's lease alive (a step
 * back kept a killed io-engine's node Online that much longer); core's node deadline runs on its
 * own monotonic clock (a step forward made an offline node's replicas lost at once).
 */
describe('a step of the wall clock', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-clock-'));
  const clock = join(dir, 'offset');
  let c: TestCluster;
  let volume: string;
  beforeAll(async () => {
    if (!FAKETIME) throw new Error('libfaketime is not installed: apt-get install libfaketime');
    writeFileSync(clock, '+0');
    c = await TestCluster.start({
      engines: 2,
      coreFlags: [...coreFlags({ '--node-deadline': '60s' }), '--metrics-address', '127.0.0.1:0'],
      env: {
        LD_PRELOAD: FAKETIME,
        FAKETIME_TIMESTAMP_FILE: clock,
        FAKETIME_NO_CACHE: '1',
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      },
    });
    volume = newVolumeId();
    await c.rest.createVolume(volume, {
      size: 8 * MiB,
      replicas: 2,
      thin: true,
      policy: { self_heal: true },
    });
    await c.rest.publishVolume(volume, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Step every daemon's wall clock to `offset` (e.g. '+120', seconds from real time), then let more than every lease TTL pass. */
  const step = async (offset: string) => {
    const metrics = metricsUrl(c.cores.at(-1)!)!;
    const before = await reconcilerRuns(metrics, 'pass');
    writeFileSync(clock, offset);
    // Reconcile passes every 300 ms: 15 of them outlast the io-engines' 2 s heartbeat TTL and core's 3 s lease.
    await waitFor(async () => (await reconcilerRuns(metrics, 'pass')) >= before + 15, {
      what: '15 reconcile passes',
    });
  };

  it('2 minutes forward: core keeps its lease, the nodes stay online, nothing is reported', async () => {
    const core = c.cores.at(-1)!;
    const events = (await c.events()).length;
    await step('+120');
    expect(core.running).toBe(true);
    for (const e of c.engines) expect((await c.rest.getNode(e.node)).state.status).toBe('Online');
    expect((await c.rest.getVolume(volume)).state.status).toBe('Online');
    expect((await c.events()).slice(events)).toEqual([]);
  });

  it('5 minutes back: an io-engine killed just before still goes offline within its TTL', async () => {
    const killed = c.engine('node-2');
    killed.proc.child.kill('SIGKILL');
    await killed.proc.wait();
    // Its liveness lease, renewed last on the clock before the step, must not last 5 minutes longer.
    writeFileSync(clock, '-180');
    await waitFor(async () => (await c.rest.getNode('node-2')).state.status === 'Offline', {
      what: 'node-2 Offline',
      timeoutMs: 15_000,
    });
    expect((await c.rest.getNode('node-1')).state.status).toBe('Online');
    // Its event is logged after those of before the step, though the clock now reads earlier.
    const log = await waitFor(
      async () => {
        const all = await c.events();
        return all.some((e) => e.includes('"id":"node-2","action":"Offline"')) ? all : null;
      },
      { what: 'the Offline event' },
    );
    const at = (pattern: string) => log.findIndex((e) => e.includes(pattern));
    expect(at('"id":"node-2","action":"Offline"')).toBeGreaterThan(
      at(`"id":"${volume}","action":"Published"`),
    );
  });

  it('13 minutes forward while a node is offline: its replica is kept until the node deadline really passes', async () => {
    await step('+600'); // core's --node-deadline is 60 s
    const topology = (await c.rest.getVolume(volume)).state.replica_topology;
    expect(
      Object.values(topology)
        .map((r) => r.node)
        .sort(),
    ).toEqual(['node-1', 'node-2']);
  });
});
