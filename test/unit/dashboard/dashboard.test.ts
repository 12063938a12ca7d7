import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { render } from 'ink-testing-library';
import { createElement as h } from 'react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Dashboard } from '../../../src/lib/dashboard/Dashboard.js';
import { DashboardModel } from '../../../src/lib/dashboard/model.js';
import { makeTheme } from '../../../src/lib/dashboard/theme.js';
import { nodeSpec } from '../../../src/lib/specs/index.js';
import { nodeLivenessKey, objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { waitFor } from '../../helpers/wait.js';
import { eventRecord, seed, smallCluster, space, volumeId, volumeRecords } from './fixture.js';

const TAB = '\t';
const ENTER = '\r';
const ESC = '\u001B';
const DOWN = '\u001B[B';

describe('storctl dashboard (Ink frames over a real embedded store)', () => {
  let dir: string;
  let store: Store;
  let model: DashboardModel;
  let app: ReturnType<typeof render> | null = null;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-dash-'));
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    await seed(store, smallCluster());
    model = new DashboardModel({ store, space, mounterStateDir: join(dir, 'mounter'), coalesceMs: 50 });
    await model.start();
  });

  afterEach(async () => {
    app?.unmount();
    app = null;
    await model.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const show = (size: { width?: number; height?: number } = {}) => {
    app = render(
      h(Dashboard, {
        model,
        source: store.endpoint,
        width: 100,
        height: 30,
        theme: makeTheme({ NO_COLOR: '1' }),
        ...size,
      }),
    );
    return app;
  };
  const frame = () => app?.lastFrame() ?? '';
  const until = (what: string, check: (f: string) => boolean) =>
    waitFor(() => check(frame()), { what, timeoutMs: 10_000 });

  it('renders the header, the tabs, the volumes panel and the event log', async () => {
    show();
    await until('the volumes', (f) => f.includes(volumeId(3)));
    const f = frame();
    expect(f).toContain('nodes 3/3 online');
    expect(f).toContain('[Volumes 3]');
    expect(f).toMatch(new RegExp(`${volumeId(1)}\\s+Online\\s+1GiB\\s+2/2\\s+node-1`));
    expect(f).toMatch(new RegExp(`${volumeId(2)}\\s+Degraded\\s+1GiB\\s+1/2\\s+node-3`));
    expect(f).toContain('volume/00000001 published published on node-1');
    expect(f).toContain('q quit');
  });

  it('tab switches panels: nodes (cordoned), pools (bars), switchovers (stage), S3 mounts slot', async () => {
    show();
    await until('first frame', (f) => f.includes('[Volumes 3]'));
    app!.stdin.write(TAB); // → switchovers
    await until('switchovers', (f) => f.includes('[Switchovers 1]'));
    expect(frame()).toMatch(new RegExp(`${volumeId(1)}\\s+node-1\\s+ReplacePath`));
    app!.stdin.write(TAB); // → S3 mounts
    await until('mounts slot', (f) => f.includes('[S3 mounts 0]'));
    expect(frame()).toContain('no mounter state');
    app!.stdin.write(TAB); // → events
    app!.stdin.write(TAB); // → nodes
    await until('nodes', (f) => f.includes('[Nodes 3]'));
    expect(frame()).toMatch(/node-2\s+Online, Cordoned/);
    // A drain written by core shows as soon as the store has it.
    await store.put(
      objectKey(space, 'NodeSpec', 'node-3'),
      nodeSpec.encode({
        id: 'node-3',
        endpoint: '127.0.0.1:10127',
        labels: {},
        draining_volumes: [volumeId(2)],
        cordon_drain_state: { Draining: { cordonlabels: [], drainlabels: ['drain'] } },
      }),
    );
    await until('node-3 draining', (f) => /node-3\s+Online, Cordoned, Draining/.test(f));
    app!.stdin.write(TAB); // → pools
    await until('pools', (f) => f.includes('[Pools 2]'));
    // Capacity is core's live state: without core the bar says it is unknown; committed is stored.
    expect(frame()).toMatch(/pool-1\s+node-1\s+Online\s+\?+\s+\? \/ 3GiB \/ \? \(core not reachable\)/);
  });

  it('keys sent in one write are taken one by one', async () => {
    show();
    await until('first frame', (f) => f.includes('[Volumes 3]'));
    app!.stdin.write('\t\t'); // → switchovers → S3 mounts
    await until('two panels on', (f) => f.includes('[S3 mounts 0]'));
  });

  it('re-lays out at another size (a resize): narrower lines, fewer rows', async () => {
    show();
    await until('first frame', (f) => f.includes(volumeId(3)));
    app!.rerender(
      h(Dashboard, {
        model,
        source: store.endpoint,
        width: 60,
        height: 14,
        theme: makeTheme({ NO_COLOR: '1' }),
      }),
    );
    await until(
      'narrow frame',
      (f) => f.split('\n').every((l) => l.length <= 60) && !f.includes(volumeId(1)),
    );
    expect(frame().split('\n').length).toBeLessThanOrEqual(14);
    expect(frame()).toMatch(/> 00000001 +Online/); // uuids by their first 8 digits under 100 columns
  });

  it('/ filters the active panel; esc clears the filter', async () => {
    show();
    await until('first frame', (f) => f.includes(volumeId(3)));
    app!.stdin.write('/');
    await until('filter prompt', (f) => f.includes('enter keep'));
    app!.stdin.write('Degraded');
    await until('filtered', (f) => !f.includes(volumeId(1)));
    expect(frame()).toContain(volumeId(2));
    expect(frame()).not.toContain(volumeId(3));
    app!.stdin.write(ENTER);
    await until('filter kept', (f) => f.includes("filter 'Degraded'"));
    app!.stdin.write(ESC);
    await until('filter cleared', (f) => f.includes(volumeId(1)) && f.includes(volumeId(3)));
    app!.stdin.write('6'); // the event log filters too
    await until('events panel', (f) => f.includes('[Events 2]'));
    app!.stdin.write('/');
    await until('filter prompt', (f) => f.includes('enter keep'));
    app!.stdin.write('published');
    await until('one event', (f) => f.includes('Events (1)') && !f.includes('volume created'));
  });

  it('enter opens the selected volume with describe volume content; esc goes back', async () => {
    show();
    await until('first frame', (f) => f.includes(volumeId(3)));
    app!.stdin.write(DOWN);
    await until('the second row selected', (f) => f.includes(`> ${volumeId(2)}`));
    app!.stdin.write(ENTER);
    await until('details', (f) => f.includes(`Volume ${volumeId(2)}`));
    expect(frame()).toMatch(/Status:\s+Degraded \(stored specs only/);
    expect(frame()).toContain('Replicas:');
    app!.stdin.write(ESC);
    await until('back to the list', (f) => f.includes('[Volumes 3]') && f.includes(volumeId(3)));
  });

  it('a store write shows in a next frame (a new volume, its event), with no re-read', async () => {
    show();
    await until('first frame', (f) => f.includes('[Volumes 3]'));
    await seed(store, [
      ...volumeRecords(4, { node: 'node-3' }),
      eventRecord('created', volumeId(4), 'new one'),
    ]);
    await until('the new volume', (f) => f.includes('[Volumes 4]') && f.includes(volumeId(4)));
    expect(frame()).toContain('volume/00000004 created new one');
  });

  it('the selection stays on its volume when one is added above it', async () => {
    show();
    await until('first frame', (f) => f.includes(volumeId(3)));
    app!.stdin.write(DOWN);
    await until('the second row selected', (f) => f.includes(`> ${volumeId(2)}`));
    await seed(store, volumeRecords(0));
    await until('the new first row', (f) => f.includes(volumeId(0)));
    expect(frame()).toContain(`> ${volumeId(2)}`);
  });

  it('a node goes offline when its liveness key is deleted', async () => {
    show();
    app!.stdin.write('1'); // nodes panel
    await until('nodes', (f) => /node-3\s+Online/.test(f));
    await store.delete(nodeLivenessKey(space, 'node-3'));
    await until('node-3 offline', (f) => /node-3\s+Offline/.test(f));
    expect(frame()).toContain('nodes 2/3 online');
  });

  it('fits 80×24 (lines never wrap) and marks the selection without colour', async () => {
    show({ width: 80, height: 23 });
    await until('first frame', (f) => f.includes('00000003 '));
    const lines = frame().split('\n');
    expect(lines.length).toBeLessThanOrEqual(23);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(80);
    expect(frame()).toMatch(/> 00000001 +Online +1GiB +2\/2 +node-1/);
    // NO_COLOR (any non-empty value) takes every colour away; the `>` marker stays.
    expect(makeTheme({ NO_COLOR: '1' }).tone('bad')).toBeUndefined();
    expect(makeTheme({ NO_COLOR: '1' }).accent).toBeUndefined();
    expect(makeTheme({}).tone('bad')).toBe('red');
  });
});

describe('storctl dashboard with many volumes', () => {
  it('renders only the rows in view, and End reaches the last one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'storctl-dash-many-'));
    const store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    const model = new DashboardModel({ store, space, coalesceMs: 50 });
    try {
      const records: [string, string][] = [];
      for (let n = 1; n <= 2000; n++) records.push(...volumeRecords(n));
      await seed(store, records, 1000);
      await model.start();
      const app = render(
        h(Dashboard, { model, source: store.endpoint, width: 100, height: 24, theme: makeTheme({}) }),
      );
      const frame = () => app.lastFrame() ?? '';
      await waitFor(() => frame().includes('1-14 of 2000'), { what: 'the first window' });
      expect(frame().match(/[0-9a-f]{8}-0000-4000-8000-000000000000/g)).toHaveLength(14);
      app.stdin.write('\u001B[F'); // End
      await waitFor(() => frame().includes(`> ${volumeId(2000)}`), { what: 'the last volume' });
      expect(frame()).toContain('1987-2000 of 2000');
      app.unmount();
    } finally {
      await model.stop();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
