import type { KeyValue, Store } from '../store/types.js';

/**
 * Big prefixes are read in pages, never in one response. Larger than Mayastor's 500: etcd 3.4 counts
 * the whole remaining range on every limited request, so small pages make a 100k-key read quadratic;
 * 2000 values of ~1 KiB stay well under gRPC's 4 MiB message limit.
 */
export const PAGE_LIMIT = 2000;

/**
 * Every key under `prefix`, sorted by key, read page by page (each page starts after the last key).
 * The next page is requested before the current one is handed out, so the store works on it while
 * the caller decodes.
 */
export async function* readPrefix(
  store: Store,
  prefix: string,
  pageLimit = PAGE_LIMIT,
): AsyncGenerator<KeyValue> {
  let pending = store.range(prefix, { limit: pageLimit });
  for (;;) {
    const page = await pending;
    const last = page.kvs[page.kvs.length - 1];
    if (page.more && last) pending = store.range(prefix, { limit: pageLimit, startKey: `${last.key}\0` });
    yield* page.kvs;
    if (!page.more || !last) return;
  }
}

export async function readAll(store: Store, prefix: string, pageLimit = PAGE_LIMIT): Promise<KeyValue[]> {
  const out: KeyValue[] = [];
  for await (const kv of readPrefix(store, prefix, pageLimit)) out.push(kv);
  return out;
}
