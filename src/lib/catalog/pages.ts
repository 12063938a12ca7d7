import type { KeyValue, Store } from '../store/types.js';
import { prefixEnd } from '../store/validate.js';

/**
 * Big prefixes are read in pages, never in one response. Larger than Mayastor's 500: etcd 3.4 counts
 * the whole remaining range on every limited request, so small pages make a 100k-key read quadratic;
 * 2000 values of ~1 KiB stay well under gRPC's 4 MiB message limit.
 */
export const PAGE_LIMIT = 2000;

/**
 * A range the store reports holding more than this many pages is read as sub-ranges, one per next
 * key character: etcd's per-request count then walks a sub-range, not everything left (100k
 * volumes: 1.0 s instead of 2.4 s of etcd time).
 */
const SPLIT_PAGES = 8;
/** Characters ids start with (uuids, names); keys starting otherwise fall into the gaps between. */
const SPLIT_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** A key range [from, to) still to read; `under` is set when it is exactly the keys under that prefix. */
interface Span {
  from: string;
  to: string;
  under?: string;
}

/**
 * A page as the store gave it: its key-values, (etcd) the Range response still encoding them, or
 * (embedded) its keys and values alone.
 */
export type StoredPage =
  | { kvs: KeyValue[]; n: number }
  | { encoded: Uint8Array; n: number }
  | { keys: string[]; values: string[]; n: number };

/** One page read, with what the next read needs. */
interface PageRead<P> {
  page: P;
  n: number;
  lastKey: string | undefined;
  more: boolean;
  count?: number;
}

/**
 * Every key under `prefix`, sorted by key, read page by page (each page starts after the last key).
 * The next request is sent before the current page is handed out, so the store works on it while
 * the caller decodes.
 */
export async function* readPrefixPages(
  store: Store,
  prefix: string,
  pageLimit = PAGE_LIMIT,
): AsyncGenerator<KeyValue[]> {
  yield* spanPages(prefix, pageLimit, (span) =>
    store.range(prefix, { limit: pageLimit, startKey: span.from, endKey: span.to }).then((r) => ({
      page: r.kvs,
      n: r.kvs.length,
      lastKey: r.kvs[r.kvs.length - 1]?.key,
      more: r.more,
      count: r.count,
    })),
  );
}

/**
 * readPrefixPages for a reader that decodes pages elsewhere (a worker thread): etcd's pages stay
 * encoded (Store.rangeEncoded), the embedded store's come as keys and values
 * (Store.rangeKeysValues).
 */
export async function* readPrefixStoredPages(
  store: Store,
  prefix: string,
  pageLimit = PAGE_LIMIT,
): AsyncGenerator<StoredPage> {
  const rangeKeysValues = store.rangeKeysValues?.bind(store);
  if (rangeKeysValues) {
    yield* spanPages(prefix, pageLimit, (span) =>
      rangeKeysValues(prefix, { limit: pageLimit, startKey: span.from, endKey: span.to }).then((r) => ({
        page: { keys: r.keys, values: r.values, n: r.keys.length },
        n: r.keys.length,
        lastKey: r.keys[r.keys.length - 1],
        more: r.more,
      })),
    );
    return;
  }
  const rangeEncoded = store.rangeEncoded?.bind(store);
  if (!rangeEncoded) {
    for await (const kvs of readPrefixPages(store, prefix, pageLimit)) yield { kvs, n: kvs.length };
    return;
  }
  yield* spanPages(prefix, pageLimit, (span) =>
    rangeEncoded(prefix, { limit: pageLimit, startKey: span.from, endKey: span.to }).then((r) => ({
      page: { encoded: r.bytes, n: r.n },
      n: r.n,
      lastKey: r.lastKey,
      more: r.more,
      count: r.count,
    })),
  );
}

async function* spanPages<P>(
  prefix: string,
  pageLimit: number,
  read: (span: Span) => Promise<PageRead<P>>,
): AsyncGenerator<P> {
  const todo: Span[] = [{ from: prefix, to: prefixEnd(prefix), under: prefix }];
  const readSpan = (span: Span) => read(span).then((r) => ({ span, r }));
  let pending = readSpan(todo.shift()!);
  for (;;) {
    const { span, r } = await pending;
    if (r.more && r.lastKey !== undefined) todo.unshift(...rest(span, r.count, `${r.lastKey}\0`, pageLimit));
    const next = todo.shift();
    if (next) pending = readSpan(next);
    if (r.n > 0) yield r.page;
    if (!next) return;
  }
}

/** readPrefixPages, one key at a time. */
export async function* readPrefix(
  store: Store,
  prefix: string,
  pageLimit = PAGE_LIMIT,
): AsyncGenerator<KeyValue> {
  for await (const page of readPrefixPages(store, prefix, pageLimit)) yield* page;
}

/** What is left of `span` from `after` on: one span, or sub-spans when it is big and splittable. */
function rest(span: Span, count: number | undefined, after: string, pageLimit: number): Span[] {
  const under = span.under;
  if (under === undefined || (count ?? 0) <= SPLIT_PAGES * pageLimit) return [{ from: after, to: span.to }];
  const spans: Span[] = [];
  let from = after;
  for (const c of SPLIT_ALPHABET) {
    const sub = under + c;
    const subEnd = prefixEnd(sub);
    if (subEnd <= from) continue;
    if (sub > from) spans.push({ from, to: sub });
    spans.push(sub >= from ? { from: sub, to: subEnd, under: sub } : { from, to: subEnd });
    from = subEnd;
  }
  spans.push({ from, to: span.to });
  return spans;
}

export async function readAll(store: Store, prefix: string, pageLimit = PAGE_LIMIT): Promise<KeyValue[]> {
  const out: KeyValue[] = [];
  for await (const kv of readPrefix(store, prefix, pageLimit)) out.push(kv);
  return out;
}
