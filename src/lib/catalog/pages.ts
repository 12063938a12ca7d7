import type { KeyValue, Store } from '../store/types.js';

/** Mayastor's ETCD_MAX_PAGE_LIMIT: big prefixes are read in pages, never in one response. */
export const PAGE_LIMIT = 500;

/** Every key under `prefix`, sorted by key, read page by page (each page starts after the last key). */
export async function* readPrefix(
  store: Store,
  prefix: string,
  pageLimit = PAGE_LIMIT,
): AsyncGenerator<KeyValue> {
  let startKey: string | undefined;
  for (;;) {
    const page = await store.range(prefix, { limit: pageLimit, startKey });
    for (const kv of page.kvs) yield kv;
    if (!page.more || page.kvs.length === 0) return;
    startKey = `${page.kvs[page.kvs.length - 1].key}\0`;
  }
}

export async function readAll(store: Store, prefix: string, pageLimit = PAGE_LIMIT): Promise<KeyValue[]> {
  const out: KeyValue[] = [];
  for await (const kv of readPrefix(store, prefix, pageLimit)) out.push(kv);
  return out;
}
