import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MetadataLog, readJournal } from '../../../src/daemons/io-engine/metadata-log.js';
import { POOL_JOURNAL_FILE, POOL_META_FILE, Pool } from '../../../src/daemons/io-engine/pool.js';

describe('pool metadata: snapshot plus journal', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-metalog-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A key-value state whose snapshot is the whole map, as Pool's is. */
  function kvLog(state: Map<string, number>, gen = 0, lines = 0) {
    const log = new MetadataLog(
      join(dir, 'snap.json'),
      join(dir, 'journal'),
      gen,
      {
        snapshot: (g) => JSON.stringify({ gen: g, entries: Object.fromEntries(state) }),
        record: (k) => JSON.stringify({ k, v: state.get(k) ?? null }),
        entries: () => state.size,
      },
      async () => {},
      lines,
    );
    return log;
  }
  async function load(): Promise<Map<string, number>> {
    const snap = JSON.parse(await readFile(join(dir, 'snap.json'), 'utf8'));
    const state = new Map(Object.entries(snap.entries as Record<string, number>));
    for (const rec of (await readJournal(join(dir, 'journal'), snap.gen)).records as {
      k: string;
      v: number | null;
    }[]) {
      if (rec.v === null) state.delete(rec.k);
      else state.set(rec.k, rec.v);
    }
    return state;
  }

  it('appends one line per change and compacts into a new snapshot once the journal is as big', async () => {
    const state = new Map<string, number>();
    const log = kvLog(state);
    await log.save(); // first write: snapshot of generation 1 and an empty journal
    for (let i = 0; i < 300; i++) {
      state.set(`k${i % 200}`, i);
      if (i % 7 === 0) state.delete(`k${(i * 3) % 200}`);
      await Promise.all([log.save(`k${i % 200}`), log.save(`k${(i * 3) % 200}`)]);
      expect(await load()).toEqual(state);
    }
    const journal = (await readFile(join(dir, 'journal'), 'utf8')).split('\n').filter(Boolean);
    const snap = JSON.parse(await readFile(join(dir, 'snap.json'), 'utf8'));
    expect(snap.gen).toBeGreaterThan(1); // compacted at least once
    expect(JSON.parse(journal[0])).toEqual({ gen: snap.gen });
    expect(journal.length).toBeLessThanOrEqual(257);
    await log.close();
  });

  it('drops a torn last line, refuses an unreadable line followed by good ones, ignores a stale generation', async () => {
    const path = join(dir, 'journal');
    await writeFile(path, '{"gen":3}\n{"k":"a","v":1}\n{"k":"b","v":2}\n');
    expect(await readJournal(path, 3)).toEqual({
      records: [
        { k: 'a', v: 1 },
        { k: 'b', v: 2 },
      ],
      appendable: true,
    });
    // written before the snapshot of gen 4
    expect(await readJournal(path, 4)).toEqual({ records: [], appendable: false });
    await appendFile(path, '{"k":"c","v');
    expect(await readJournal(path, 3)).toMatchObject({ appendable: false, records: { length: 2 } });
    await appendFile(path, '\n{"k":"d","v":4}\n');
    await expect(readJournal(path, 3)).rejects.toThrow(/line 4 is unreadable but later lines are not/);
    expect(await readJournal(join(dir, 'missing'), 0)).toEqual({ records: [], appendable: false });
  });

  it('a pool whose journal ends in a torn line (a crash mid-append) keeps working across imports', async () => {
    const uuid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const pool = await Pool.create('p', dir, 1 << 30);
    await pool.createReplica({ uuid: uuid(1), name: uuid(1), size: 1 << 20, thin: true });
    await pool.durable();
    await pool.close();
    await appendFile(join(dir, POOL_JOURNAL_FILE), '{"r":"00000000-0000-4000-8000-00000000'); // torn
    const second = await Pool.import(dir, 'p');
    await second.createReplica({ uuid: uuid(2), name: uuid(2), size: 1 << 20, thin: true });
    await second.durable();
    await second.close();
    const third = await Pool.import(dir, 'p');
    expect([...third.replicas.keys()].sort()).toEqual([uuid(1), uuid(2)]);
    await third.close();
  });

  it('a pool re-imported after journaled changes holds exactly its replicas', async () => {
    const pool = await Pool.create('p', dir, 1 << 30);
    const ids = Array.from(
      { length: 40 },
      (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    );
    await Promise.all(ids.map((uuid) => pool.createReplica({ uuid, name: uuid, size: 1 << 20, thin: true })));
    for (const uuid of ids.slice(0, 10)) await pool.destroyReplica(uuid);
    await pool.resizeReplica(ids[20], 2 << 20);
    await pool.durable();
    await pool.close();
    expect((await readFile(join(dir, POOL_JOURNAL_FILE), 'utf8')).split('\n').length).toBeGreaterThan(40);
    const again = await Pool.import(dir, 'p');
    expect([...again.replicas.keys()].sort()).toEqual(ids.slice(10).sort());
    expect(again.replicas.get(ids[20])?.size).toBe(2 << 20);
    expect(again.removedOrphans).toEqual([]);
    await again.close();
    expect(JSON.parse(await readFile(join(dir, POOL_META_FILE), 'utf8')).name).toBe('p');
  });
});
