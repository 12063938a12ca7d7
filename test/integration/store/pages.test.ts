import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pageMessage } from '../../../src/lib/catalog/page-validator.js';
import { readAll, readPrefixStoredPages } from '../../../src/lib/catalog/pages.js';
import { decodeRangeKvs } from '../../../src/lib/store/etcd-range-codec.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { compareBytes } from '../../../src/lib/store/validate.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';

// Uuids (split twice at small page sizes) and ids that start outside the split alphabet.
const ids = [
  ...Array.from({ length: 600 }, () => randomUUID()),
  ...['Node-A', 'node-1', 'node-2', '-x', ':x', '~x', 'é', '中', 'zz', '{x', '0', 'f', '\u007f', 'a b'],
];
const expected = ids.map((id) => `p/${id}`).sort(compareBytes);
/** Values of several lengths and scripts (one empty): what a page's decoding must give back byte for byte. */
const storedValue = (id: string) =>
  id === '0' ? '' : `{"id":${JSON.stringify(id)},"pad":"${'é中x'.repeat(id.length)}"}`;

describe.each(['embedded', 'etcd'])('paged prefix reads (%s)', (backend) => {
  let dir: string;
  let etcd: EtcdServer | undefined;
  let store: Store;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-pages-')); // here: a filtered run skips afterAll
    if (backend === 'etcd') etcd = await startEtcd();
    store = await openStore(etcd ? etcd.url : `sqlite:${join(dir, 'store.db')}`);
    for (let i = 0; i < ids.length; i += 100) {
      const success = ids
        .slice(i, i + 100)
        .map((id) => ({ type: 'put' as const, key: `p/${id}`, value: storedValue(id) }));
      await store.txn({ compare: [], success });
    }
    await store.put('p0', 'outside the prefix');
    await store.put('o/x', 'before the prefix');
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('pages for a worker (etcd: still encoded; embedded: keys and values) hold the same keys and values, in the same order', async () => {
    for (const pageLimit of [1, 7, 100, 2000]) {
      const seen: { key: string; value: string }[] = [];
      for await (const page of readPrefixStoredPages(store, 'p/', pageLimit)) {
        expect('encoded' in page).toBe(backend === 'etcd');
        expect('keys' in page).toBe(backend === 'embedded');
        const msg = pageMessage(page);
        const { keys, values } = 'encoded' in msg ? decodeRangeKvs(msg.encoded) : msg;
        expect(keys.length).toBe(page.n);
        expect(page.n).toBeLessThanOrEqual(pageLimit);
        for (const [i, key] of keys.entries()) seen.push({ key, value: values[i] });
      }
      expect(seen).toEqual(expected.map((key) => ({ key, value: storedValue(key.slice(2)) })));
    }
  });

  it('returns every key under the prefix once, in key order, whatever the page size', async () => {
    for (const page of [1, 3, 10, 100, 2000]) {
      const keys = (await readAll(store, 'p/', page)).map((kv) => kv.key);
      expect(keys.length).toBe(expected.length);
      expect(keys).toEqual(expected);
    }
  });
});
