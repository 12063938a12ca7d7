/**
 * `storctl dashboard` on a 10k-volume embedded store, in-process through ink-testing-library frames:
 * time to the first frame showing a volume, and the latency from a store write to the frame showing
 * it. Beside them, their peers measured in the same run: one full read of the same keys (what the
 * dashboard does once at start, and what every change would cost if it re-read instead of watching).
 *
 *   npx tsx bench/dashboard.ts [volumes] [update-rounds]
 *
 * Bars: first frame < 1000 ms, every update < 500 ms.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { render } from 'ink-testing-library';
import { createElement as h } from 'react';
import { readCluster } from '../src/lib/catalog/cluster.js';
import { Dashboard } from '../src/lib/dashboard/Dashboard.js';
import { DASHBOARD_TYPES, DashboardModel } from '../src/lib/dashboard/model.js';
import { makeTheme } from '../src/lib/dashboard/theme.js';
import { openStore } from '../src/lib/store/open.js';
import { waitFor } from '../test/helpers/wait.js';
import {
  livenessRecord,
  nodeRecord,
  poolRecord,
  seed,
  space,
  volumeId,
  volumeRecords,
} from '../test/unit/dashboard/fixture.js';

const volumes = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 10);
const BASE = 0x100000; // seeded volumes are BASE+i; each update writes BASE-1-r, which sorts first

const dir = mkdtempSync(join(tmpdir(), 'storctl-bench-dash-'));
const store = await openStore(`sqlite:${join(dir, 'store.db')}`);
try {
  const seedStart = performance.now();
  const records: [string, string][] = [];
  for (const n of ['node-1', 'node-2', 'node-3']) records.push(nodeRecord(n), livenessRecord(n));
  records.push(
    poolRecord('pool-1', 'node-1'),
    poolRecord('pool-2', 'node-2'),
    poolRecord('pool-3', 'node-3'),
  );
  for (let i = 0; i < volumes; i++)
    records.push(
      ...volumeRecords(BASE + i, {
        replicas: 1,
        pool: `pool-${1 + (i % 3)}`,
        node: i % 2 ? `node-${1 + (i % 3)}` : undefined,
      }),
    );
  await seed(store, records, 1000);
  const seedMs = performance.now() - seedStart;

  const readStart = performance.now();
  await readCluster(store, space, DASHBOARD_TYPES);
  const fullReadMs = performance.now() - readStart;

  const start = performance.now();
  const model = new DashboardModel({ store, space });
  await model.start();
  const app = render(
    h(Dashboard, { model, source: store.endpoint, width: 100, height: 30, theme: makeTheme({}) }),
  );
  const frame = () => app.lastFrame() ?? '';
  await waitFor(() => frame().includes(volumeId(BASE)), { intervalMs: 1, what: 'the first frame' });
  const firstFrameMs = performance.now() - start;

  // Write → frame showing it: back to back (each write lands inside the previous redraw's coalescing
  // window, the worst case), then after the window has passed (an isolated change).
  const update = async (n: number) => {
    const id = volumeId(n);
    const t = performance.now();
    await seed(store, volumeRecords(n, { node: 'node-1' }));
    await waitFor(() => frame().includes(id), { intervalMs: 1, what: `volume ${id} in a frame` });
    return performance.now() - t;
  };
  const updates: number[] = [];
  for (let r = 0; r < rounds; r++) updates.push(await update(BASE - 1 - r));
  const isolated: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await new Promise((resolve) => setTimeout(resolve, 200)); // past the coalescing window (150 ms)
    isolated.push(await update(BASE - 1 - rounds - r));
  }
  app.unmount();
  await model.stop();

  const sorted = [...updates, ...isolated].sort((a, b) => a - b);
  const ms = (n: number) => Math.round(n * 10) / 10;
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { p50: ms(s[Math.floor(s.length / 2)]), max: ms(s[s.length - 1]) };
  };
  console.log(
    JSON.stringify(
      {
        volumes,
        keys: records.length,
        seedMs: ms(seedMs),
        firstFrameMs: ms(firstFrameMs),
        firstFrameBarMs: 1000,
        firstFramePass: firstFrameMs < 1000,
        updateMs: { backToBack: stats(updates), isolated: stats(isolated) },
        updateBarMs: 500,
        updatePass: sorted[sorted.length - 1] < 500,
        coalesceMs: 150,
        peer: {
          fullReadMs: ms(fullReadMs),
          note: 'one readCluster of the same keys: paid once at start; a re-read per change would pay it every time',
        },
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
      },
      null,
      2,
    ),
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
