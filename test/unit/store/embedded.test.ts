import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../../src/lib/errors.js';
import { EmbeddedStore } from '../../../src/lib/store/embedded.js';
import type { WatchEvent } from '../../../src/lib/store/types.js';
import { waitFor } from '../../helpers/wait.js';

/** Embedded-only behaviour the shared contract cannot see (SQLite internals, locking, retention). */
const dir = mkdtempSync(join(tmpdir(), 'storctl-embedded-unit-'));
let n = 0;
const opened: EmbeddedStore[] = [];
const fresh = (options = {}) => {
  const path = join(dir, `s${n++}.db`);
  return { path, open: () => opened[opened.push(EmbeddedStore.open(path, options)) - 1] };
};
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('EmbeddedStore', () => {
  it('starts at revision 1 in WAL mode', async () => {
    const { path, open } = fresh();
    const s = open();
    expect(await s.revision()).toBe(1);
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    raw.close();
  });

  it('hides keys of an expired lease from reads before any writer swept them', async () => {
    const { path, open } = fresh();
    const s = open();
    const lease = await s.grantLease(1, { keepAlive: false });
    await lease.put('p/x', 'v');
    await waitFor(async () => (await s.leaseTimeToLive(lease.id)) === -1, {
      timeoutMs: 5_000,
      what: 'expiry',
    });
    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.prepare('SELECT count(*) FROM kv').pluck().get()).toBe(1); // still on disk
      expect(await s.get('p/x')).toBeNull();
      expect((await s.range('p/')).kvs).toEqual([]);
      expect(await s.rangeKeysValues('p/', { limit: 10 })).toEqual({ keys: [], values: [], more: false });
      const before = await s.revision();
      await s.put('other', 'write sweeps');
      expect(raw.prepare('SELECT count(*) FROM kv').pluck().get()).toBe(1); // only 'other'
      expect(await s.revision()).toBe(before + 2); // the sweep is its own revision
    } finally {
      raw.close();
    }
  });

  it('compacts old history automatically beyond the retention', async () => {
    const { open } = fresh({ historyRetention: 5 });
    const s = open();
    for (let i = 0; i < 20; i++) await s.put('k', String(i));
    const w = await s.watch('k', { fromRevision: 2 });
    const compactedAt = await new Promise<number>((resolve) => w.on('compacted', resolve));
    expect(compactedAt).toBeGreaterThan(2);
    expect(compactedAt).toBeLessThanOrEqual(await s.revision());
  });

  it('wakes watches of other stores of this process on the same file at once', async () => {
    // A poll every ten minutes: an event that arrives at all was delivered by the in-process wake,
    // not by polling (no clock in the assertion, so a slow machine cannot fail it).
    const { open } = fresh({ pollIntervalMs: 600_000 });
    const a = open();
    const b = open();
    const w = await a.watch('p/');
    const got: WatchEvent[] = [];
    w.on('event', (e: WatchEvent) => got.push(e));
    // The first event may come from the pump that starting the watch schedules; the second only
    // from the wake.
    await b.put('p/0', 'x');
    await waitFor(() => got.length === 1, { what: 'the first event' });
    await b.put('p/1', 'y');
    await waitFor(() => got.length === 2, {
      what: 'the second event, with polling out of reach',
      timeoutMs: 10_000,
    });
    expect(got).toMatchObject([
      { type: 'put', kv: { key: 'p/0', value: 'x' } },
      { type: 'put', kv: { key: 'p/1', value: 'y' } },
    ]);
  });

  it('maps a database locked past the busy timeout to StoreUnavailableError', async () => {
    const { path, open } = fresh({ busyTimeoutMs: 200 });
    const s = open();
    const raw = new Database(path);
    raw.exec('BEGIN IMMEDIATE');
    try {
      const err = await s.put('k', 'v').catch((e) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err.message).toContain('locked');
      // readers are not blocked by a writer
      expect(await s.get('k')).toBeNull();
    } finally {
      raw.exec('ROLLBACK');
      raw.close();
    }
    await s.put('k', 'v');
  });

  it('refuses calls after close', async () => {
    const { open } = fresh();
    const s = open();
    await s.close();
    await expect(s.get('k')).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
