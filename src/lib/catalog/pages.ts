import type { KeyValue, RangeResult, Store } from '../store/types.js';
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
 * Every key under `prefix`, sorted by key, read page by page (each page starts after the last key).
 * The next request is sent before the current page is handed out, so the store works on it while
 * the caller decodes.
 */
export async function* readPrefixPages(
  store: Store,
  prefix: string,
  pageLimit = PAGE_LIMIT,
): AsyncGenerator<KeyValue[]> {
  const todo: Span[] = [{ from: prefix, to: prefixEnd(prefix), under: prefix }];
  const read = (span: Span) =>
    store
      .range(prefix, { limit: pageLimit, startKey: span.from, endKey: span.to })
      .then((page) => ({ span, page }));
  let pending = read(todo.shift()!);
  for (;;) {
    const { span, page } = await pending;
    const last = page.kvs[page.kvs.length - 1];
    if (page.more && last) todo.unshift(...rest(span, page, `${last.key}\0`, pageLimit));
    const next = todo.shift();
    if (next) pending = read(next);
    if (page.kvs.length > 0) yield page.kvs;
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
function rest(span: Span, page: RangeResult, after: string, pageLimit: number): Span[] {
  const under = span.under;
  if (under === undefined || (page.count ?? 0) <= SPLIT_PAGES * pageLimit)
    return [{ from: after, to: span.to }];
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
