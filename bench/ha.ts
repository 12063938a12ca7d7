/**
 * HA failover and switchover times with real processes (prints JSON):
 * - failover-1: a 2-replica volume staged with ext4 through the csi-node, an application writing
 *   durable 4 KiB blocks; kill -9 of the io-engine hosting its target. Time from the kill to the
 *   first write acknowledged after it (the path replaced and I/O flowing again), p50/p99 over the runs.
 * - failover-50: 50 volumes staged as raw block devices, their targets on one io-engine, one durable
 *   writer per device; kill -9 of that io-engine; per volume, time to the first write acknowledged after it.
 * - forced: `storctl switchover --wait` of the healthy, mounted volume, while writing.
 * - hung-1: the same volume, while writing, its target's io-engine stopped (SIGSTOP: connections
 *   stay open, nothing answers) until the target moved; time from the stop to the first write
 *   acknowledged after it.
 * Detection settings are those of the bar: path checks every 250 ms, failed after 2 misses,
 * probe timeout 1 s.
 *
 *   npx tsx bench/ha.ts [runs=5] [volumes=50]
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { runStorctl } from '../test/helpers/storctl.js';
import { waitFor } from '../test/helpers/wait.js';
import { FAST_HA_NODE_FLAGS, HaRig, PAUSABLE_CORE_FLAGS } from '../test/integration/ha/fixture.js';
import { BLOCK, blockOf } from '../test/integration/ha/writer.js';

const runs = Number(process.argv[2] ?? 5);
const volumeCount = Number(process.argv[3] ?? 50);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const summary = (xs: number[]) => ({
  n: xs.length,
  p50Ms: pct(xs, 50),
  p99Ms: pct(xs, 99),
  maxMs: Math.max(...xs),
});

/** Acknowledgement times of a loop of durable writes (or reads) on one file or device. */
class IoLoop {
  readonly acks: number[] = [];
  errors = 0;
  private stopped = false;
  private done: Promise<void> = Promise.resolve();
  constructor(
    private readonly path: string,
    private readonly mode: 'write' | 'device',
  ) {}
  start(): void {
    this.done = (async () => {
      // A device file is written in place ('r+'); a file in the filesystem is created ('w').
      const fh = await open(this.path, this.mode === 'write' ? 'w' : 'r+');
      const buf = Buffer.alloc(BLOCK);
      try {
        for (let i = 0; !this.stopped; i++) {
          try {
            // Durable writes: a read could be answered from the page cache without touching the path.
            await fh.write(this.mode === 'write' ? blockOf(i) : buf, 0, BLOCK, (i % 1024) * BLOCK);
            await fh.datasync();
            this.acks.push(Date.now());
          } catch {
            this.errors++;
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      } finally {
        await fh.close();
      }
    })();
  }
  firstAfter(t: number): number | undefined {
    return this.acks.find((a) => a > t);
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

async function main() {
  const rig = await HaRig.start({ engines: 3, coreFlags: PAUSABLE_CORE_FLAGS });
  const { cluster } = rig;
  try {
    const healthy = (id: string) => rig.healthy(id, 2, 120_000);
    const publish = async (targetNode: string, block: boolean) => {
      const vol = await rig.published(targetNode);
      return { id: vol.id, path: await rig.stage(vol, { block }) };
    };
    const targetNode = async (id: string) => (await cluster.rest.getVolume(id)).state.target?.node;
    const killAndRestart = async (nodeId: string, until: (t0: number) => Promise<boolean>) => {
      const engine = cluster.engine(nodeId);
      const t0 = Date.now();
      await engine.proc.kill('SIGKILL');
      await waitFor(() => until(t0), { what: 'failover', timeoutMs: 120_000 });
      await cluster.startEngine(nodeId, { grpc: engine.grpc, nbd: engine.nbd });
      return t0;
    };

    // 1 volume, ext4, a durable writer.
    const one: number[] = [];
    const vol = await publish('node-1', false);
    await healthy(vol.id);
    for (let r = 0; r < runs; r++) {
      const from = (await targetNode(vol.id))!;
      const w = new IoLoop(join(vol.path, 'bench.bin'), 'write');
      w.start();
      await waitFor(() => w.acks.length >= 10, { what: 'writes under way' });
      const t0 = await killAndRestart(
        from,
        async (t) => w.firstAfter(t) !== undefined && (await targetNode(vol.id)) !== from,
      );
      one.push(w.firstAfter(t0)! - t0);
      await w.stop();
      if (w.errors) throw new Error(`${w.errors} write errors during failover run ${r}`);
      await healthy(vol.id);
    }

    // Forced switchover of the same volume, while writing.
    const forced: number[] = [];
    for (let r = 0; r < runs; r++) {
      const w = new IoLoop(join(vol.path, 'bench.bin'), 'write');
      w.start();
      await waitFor(() => w.acks.length >= 10, { what: 'writes under way' });
      const t0 = Date.now();
      const res = await runStorctl(['switchover', '--volume', vol.id, '--wait'], { env: cluster.env });
      if (res.code !== 0) throw new Error(`switchover failed: ${res.stderr}`);
      const done = Date.now();
      await waitFor(() => w.firstAfter(done) !== undefined, { what: 'a write after the switchover' });
      forced.push(done - t0);
      await w.stop();
      if (w.errors) throw new Error(`${w.errors} write errors during forced switchover ${r}`);
      await healthy(vol.id);
    }

    // The target's io-engine hangs (SIGSTOP: its connections stay open, nothing answers), while
    // writing; it resumes once the target has moved.
    const hung: number[] = [];
    for (let r = 0; r < runs; r++) {
      const from = (await targetNode(vol.id))!;
      const w = new IoLoop(join(vol.path, 'bench.bin'), 'write');
      w.start();
      await waitFor(() => w.acks.length >= 10, { what: 'writes under way' });
      const engine = cluster.engine(from);
      const t0 = Date.now();
      process.kill(engine.proc.pid, 'SIGSTOP');
      try {
        await waitFor(async () => w.firstAfter(t0) !== undefined && (await targetNode(vol.id)) !== from, {
          what: 'failover from a hung io-engine',
          timeoutMs: 120_000,
        });
      } finally {
        process.kill(engine.proc.pid, 'SIGCONT');
      }
      hung.push(w.firstAfter(t0)! - t0);
      await w.stop();
      if (w.errors) throw new Error(`${w.errors} write errors during hung-node run ${r}`);
      await healthy(vol.id);
    }

    // N volumes as raw block devices, all targets on node-2, one reader each.
    const many = [];
    for (let i = 0; i < volumeCount; i++) many.push(await publish('node-2', true));
    const readers = many.map((v) => new IoLoop(v.path, 'device'));
    for (const r of readers) r.start();
    await waitFor(() => readers.every((r) => r.acks.length > 2), { what: 'every reader under way' });
    const t0 = await killAndRestart('node-2', async (t) =>
      readers.every((r) => r.firstAfter(t) !== undefined),
    );
    const manyTimes = readers.map((r) => r.firstAfter(t0)! - t0);
    for (const r of readers) await r.stop();
    const ioErrors = readers.reduce((n, r) => n + r.errors, 0);

    console.log(
      JSON.stringify({
        bench: 'ha',
        detection: {
          intervalMs: 250,
          failAfter: 2,
          probeTimeoutMs: 1000,
          floorMs: 500,
          flags: FAST_HA_NODE_FLAGS.join(' '),
        },
        failover1: { ...summary(one), barP50Ms: 2000, pass: pct(one, 50) < 2000 },
        failoverMany: {
          volumes: volumeCount,
          ...summary(manyTimes),
          barP99Ms: 5000,
          pass: pct(manyTimes, 99) < 5000,
          ioErrors,
        },
        forced: summary(forced),
        hung1: summary(hung),
      }),
    );
  } catch (err) {
    // What the daemons said about targets, to tell why a run failed.
    const about = /fenced|reservation|shut|destroy|export|fault|republish|switchover/i;
    for (const p of [...cluster.engines.map((e) => e.proc), ...cluster.cores, rig.ha?.proc, rig.haNode?.proc])
      for (const line of (p?.output ?? '').split('\n'))
        if (about.test(line)) console.error(line.slice(0, 400));
    throw err;
  } finally {
    await rig.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
