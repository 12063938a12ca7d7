/**
 * Partial against full rebuild, in one run: a 2 GiB thin volume on a nexus with a local child and a
 * remote one (a second io-engine). The remote child's io-engine is killed -9 and stays away for
 * `--away-s` seconds (default 10) while 1% of the volume is written in scattered 64 KiB writes; it
 * is restarted and added back (AddChildNexus of the faulted child), which rebuilds it from the
 * nexus's rebuild map (partial). Then the same child is removed and added again, which copies the
 * whole volume (full). Rebuild times come from the io-engine's rebuild history (start to end of
 * the copy), with the wall time from AddChildNexus to the child Online beside them. Prints JSON;
 * the bar: partial rebuild time under 10% of the full rebuild's.
 *
 *   npm run build && npx tsx bench/rebuild.ts [--size-mib 2048] [--away-s 10] [--percent 1]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { RebuildHistoryRecord } from '../src/lib/io-engine/client.js';
import { NbdClient } from '../src/lib/nbd/client.js';
import { waitFor } from '../test/helpers/wait.js';
import { type RunningEngine, startEngine } from '../test/integration/io-engine/engines.js';

const MiB = 1024 * 1024;
const WRITE = 64 * 1024;

const { values: opts } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '2048' },
    'away-s': { type: 'string', default: '10' },
    percent: { type: 'string', default: '1' },
  },
});
const SIZE = Number(opts['size-mib']) * MiB;
const AWAY_MS = Number(opts['away-s']) * 1000;
const PERCENT = Number(opts.percent);

const engines: RunningEngine[] = [];

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'storctl-bench-rebuild-'));
  try {
    const a = await startEngine(dir, 'node-a');
    engines.push(a);
    let b = await startEngine(dir, 'node-b');
    engines.push(b);
    const capacity = SIZE + 64 * MiB;
    await a.client.createPool({ name: 'pa', capacity });
    await b.client.createPool({ name: 'pb', capacity });
    const local = await a.client.createReplica({ uuid: randomUUID(), pool: 'pa', size: SIZE, thin: true });
    const remote = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: SIZE,
      thin: true,
      share: 'nbd',
    });
    const nexus = randomUUID();
    await a.client.createNexus({
      uuid: nexus,
      size: SIZE,
      children: [local.uri, remote.uri],
      volumeId: randomUUID(),
    });
    const target = (await a.client.publishNexus(nexus)).deviceUri;
    const dev = await NbdClient.connect(target);

    const childState = async () =>
      (await a.client.getNexus(nexus)).children.find((c) => c.uuid === remote.uuid)!;
    /** AddChildNexus, then wait for the child Online; the history record of that rebuild. */
    const rebuild = async (): Promise<{ record: RebuildHistoryRecord; wallMs: number; bytes: number }> => {
      const before = (await a.client.getRebuildHistory(nexus)).length;
      const t0 = performance.now();
      await a.client.addChildNexus(nexus, remote.uri);
      const child = await waitFor(
        async () => {
          const c = await childState();
          if (c.state === 'Faulted') throw new Error(`rebuild failed: ${c.reason}`);
          return c.state === 'Online' ? c : null;
        },
        { what: 'rebuild complete', timeoutMs: 30 * 60_000, intervalMs: 5 },
      );
      const wallMs = performance.now() - t0;
      const history = await a.client.getRebuildHistory(nexus);
      if (history.length !== before + 1)
        throw new Error(`expected one new rebuild record, have ${history.length - before}`);
      return { record: history.at(-1)!, wallMs, bytes: child.rebuiltBytes };
    };

    // ---- the outage: node-b killed, 1% of the volume written while it is away -------------------
    const port = Number(b.nbdEndpoint.split(':').pop());
    await b.stop('SIGKILL');
    engines.splice(engines.indexOf(b), 1);
    const awayFrom = performance.now();
    const count = Math.round((SIZE * PERCENT) / 100 / WRITE);
    const blocks = SIZE / WRITE;
    const buf = randomBytes(WRITE);
    const written = new Set<number>();
    for (let i = 0; i < count; i++) {
      // spread over the outage; distinct random 64 KiB blocks
      let blk: number;
      do blk = Math.floor(Math.random() * blocks);
      while (written.has(blk));
      written.add(blk);
      await dev.write(buf, blk * WRITE, false);
      const due = awayFrom + ((i + 1) * AWAY_MS) / count;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait)); // pacing the workload, not synchronisation
    }
    await dev.flush();
    const faulted = await childState();
    if (faulted.state !== 'Faulted')
      throw new Error(`the child is ${faulted.state}, not Faulted, after the outage`);
    b = await startEngine(dir, 'node-b', { nbdPort: port });
    engines.push(b);
    await b.client.importPool({ name: 'pb' });
    const awayMs = performance.now() - awayFrom;
    const partial = await rebuild();

    // ---- full rebuild of the same child ----------------------------------------------------------
    await a.client.removeChildNexus(nexus, remote.uri);
    const full = await rebuild();
    await dev.close();

    const ms = (r: RebuildHistoryRecord) => Date.parse(r.endTime) - Date.parse(r.startTime);
    const out = (x: typeof partial) => ({
      isPartial: x.record.isPartial,
      state: x.record.state,
      rebuildMs: ms(x.record),
      wallMs: Math.round(x.wallMs),
      bytesCopied: x.bytes,
      blocksTransferred: x.record.blocksTransferred,
      blocksTotal: x.record.blocksTotal,
    });
    const ratio = ms(partial.record) / Math.max(1, ms(full.record));
    const wallRatio = partial.wallMs / full.wallMs;
    const result = {
      bench: 'rebuild',
      volumeBytes: SIZE,
      thin: true,
      awayMs: Math.round(awayMs),
      writtenWhileAway: written.size * WRITE,
      writtenPercent: (written.size * WRITE * 100) / SIZE,
      partial: out(partial),
      full: out(full),
      partialToFullTime: Number(ratio.toFixed(4)),
      partialToFullWall: Number(wallRatio.toFixed(4)),
      partialToFullBytes: Number((partial.bytes / full.bytes).toFixed(4)),
      bar: {
        partialToFullTimeBelow: 0.1,
        pass: ratio < 0.1 && partial.record.isPartial && !full.record.isPartial,
      },
    };
    console.log(JSON.stringify(result));
    if (!result.bar.pass) process.exitCode = 1;
  } finally {
    for (const e of engines) await e.stop('SIGKILL').catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
