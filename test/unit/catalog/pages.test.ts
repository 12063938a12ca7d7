import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAll } from '../../../src/lib/catalog/pages.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';

describe('paged prefix reads', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-pages-'));
  let store: Store;
  beforeAll(async () => {
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    for (let i = 0; i < 10; i++) await store.put(`p/${String(i).padStart(2, '0')}`, `v${i}`);
    await store.put('p0', 'outside the prefix');
    await store.put('o/x', 'before the prefix');
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('returns every key under the prefix once, in key order, whatever the page size', async () => {
    const expected = Array.from({ length: 10 }, (_, i) => `p/${String(i).padStart(2, '0')}`);
    for (const page of [1, 3, 10, 11, 2000]) {
      expect((await readAll(store, 'p/', page)).map((kv) => kv.key)).toEqual(expected);
    }
  });
});
