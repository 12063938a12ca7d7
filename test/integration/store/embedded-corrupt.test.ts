import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { volumeValue } from '../../../bench/get-volumes.js';
import { EmbeddedStore } from '../../../src/lib/store/embedded.js';
import { damageBehind, mapSqliteError } from '../../../src/lib/store/embedded-db.js';
import { objectKey, typePrefix } from '../../../src/lib/store/keys.js';

const space = { clusterId: 'c', namespace: 'default' };
const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

/** A store file of 2000 volumes with 256 bytes of garbage in every 97th page, past its header. */
async function damagedStore(file: string): Promise<void> {
  const store = EmbeddedStore.open(file);
  for (let i = 0; i < 2000; i += 100) {
    const success = [];
    for (let j = i; j < i + 100; j++)
      success.push({
        type: 'put' as const,
        key: objectKey(space, 'VolumeSpec', uuid(j)),
        value: volumeValue(uuid(j), j),
      });
    await store.txn({ compare: [], success });
  }
  await store.close();
  const fd = openSync(file, 'r+');
  for (let p = 2; p < statSync(file).size / 4096; p += 97)
    writeSync(fd, Buffer.alloc(256, 0xde), 0, 256, p * 4096 + 100);
  closeSync(fd);
}

describe('a damaged embedded store file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-corrupt-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const healthy = join(dir, 'healthy.db');
  const damaged = join(dir, 'damaged.db');

  it('is named as damaged, with what to do', async () => {
    await damagedStore(damaged);
    const store = EmbeddedStore.open(damaged);
    try {
      const read = store.range(typePrefix(space, 'VolumeSpec'));
      await expect(read).rejects.toThrow(
        /is not a usable storctl database \(database disk image is malformed/,
      );
      await expect(read).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
        suggestions: ['point --store at the right file, or restore it from `storctl store dump` output'],
      });
    } finally {
      await store.close();
    }
  });

  it('SQLite\'s "out of memory" over a damaged file is reported as the damage; over a sound one it stays', async () => {
    // SQLite answers some reads of damaged pages (a record size or page number out of bounds) with
    // SQLITE_NOMEM; which read meets one depends on the file's layout, so the answer is given here.
    const nomem = Object.assign(new Error('out of memory'), { code: 'SQLITE_NOMEM' });
    const sound = EmbeddedStore.open(healthy);
    await sound.close();
    for (const [file, expected] of [
      [damaged, /is not a usable storctl database \(database disk image is malformed/],
      [healthy, /^store sqlite:.*: out of memory$/],
    ] as const) {
      const db = new Database(file, { readonly: true });
      try {
        const err = mapSqliteError(damageBehind(db, nomem) ?? nomem, `sqlite:${file}`, 1000);
        expect(err.message).toMatch(expected);
      } finally {
        db.close();
      }
    }
  });
});
