import { type DecodeError, isStorctlError } from '../errors.js';
import { toYaml } from '../output/yaml.js';
import { storedVolume } from '../rest/present.js';
import { codecFor, decodeRecord, type SpecType, type SpecTypes, type VolumeSpec } from '../specs/index.js';
import { stringifyJson } from '../specs/json.js';
import { type KeySpace, typePrefix } from '../store/keys.js';
import type { Store } from '../store/types.js';
import {
  PageValidator,
  type PageVerdict,
  pageMessage,
  type VolumePresenter,
  validatePageMessage,
  verdictErrors,
} from './page-validator.js';
import { PAGE_LIMIT, readPrefix, readPrefixStoredPages } from './pages.js';

/**
 * A json|yaml listing written as it is read: JSON is an array with one compact object per line,
 * YAML a sequence; the text goes out in 64 KiB chunks, and a slow reader holds up the listing
 * instead of filling memory.
 */
class ListingWriter {
  private count = 0;
  private chunk = '';

  constructor(
    private readonly format: 'json' | 'yaml',
    private readonly write: (text: string) => Promise<void> | void,
  ) {}

  /** One item, given as its JSON text (json) or as the object (yaml). */
  add(json: string | (() => string), object: () => unknown): Promise<void> | undefined {
    if (this.format === 'json') return this.addJson(typeof json === 'string' ? json : json(), 1);
    this.chunk += `${toYaml([object()]).trimEnd()}\n`;
    this.count++;
    return this.flush();
  }

  /** `count` items (json), as their texts joined by `,\n`. */
  addJson(joined: string, count: number): Promise<void> | undefined {
    if (count === 0) return undefined;
    this.chunk += `${this.count === 0 ? '[\n' : ',\n'}${joined}`;
    this.count += count;
    return this.flush();
  }

  private flush(): Promise<void> | undefined {
    if (this.chunk.length < 65536) return undefined;
    const text = this.chunk;
    this.chunk = '';
    return Promise.resolve(this.write(text));
  }

  async end(): Promise<void> {
    if (this.format === 'json') this.chunk += this.count === 0 ? '[]\n' : '\n]\n';
    else if (this.count === 0) this.chunk += '[]\n';
    if (this.chunk) await this.write(this.chunk);
  }
}

/**
 * `-o json|yaml` of a plain spec listing, streamed: each stored value is decoded (validated),
 * printed and dropped, in key order, so listing 100k volumes needs the memory of one page. Each
 * item is the stored value as is, or, given `present` (volumes), the object REST shows for it.
 */
export async function streamSpecs<K extends SpecType>(
  store: Store,
  space: KeySpace,
  type: K,
  format: 'json' | 'yaml',
  write: (text: string) => Promise<void> | void,
  { filter, present }: { filter?: (value: SpecTypes[K]) => boolean; present?: VolumePresenter } = {},
): Promise<DecodeError[]> {
  const errors: DecodeError[] = [];
  const out = new ListingWriter(format, write);
  const prefix = typePrefix(space, type);
  if (format === 'json' && !filter) {
    errors.push(...(await printValidatedPages(store, prefix, out, present)));
  } else {
    for await (const kv of readPrefix(store, prefix)) {
      let value: SpecTypes[K];
      try {
        const rec = decodeRecord(kv.key, kv.value);
        if (!rec) continue;
        value = rec.value as SpecTypes[K];
      } catch (err) {
        if (isStorctlError(err) && err.code === 'DECODE_FAILED') {
          errors.push(err as DecodeError);
          continue;
        }
        throw err;
      }
      if (filter && !filter(value)) continue;
      const object = present
        ? () => storedVolume(value as VolumeSpec, present.snapshotCounts[(value as VolumeSpec).uuid] ?? 0)
        : () => codecFor(type).toJson(value);
      const added = out.add(present ? () => stringifyJson(object()) : kv.value, object);
      if (added) await added;
    }
  }
  await out.end();
  return errors;
}

/** `-o json|yaml` of objects read page by page from elsewhere (core's REST pages), streamed. */
export async function streamObjects(
  pages: AsyncIterable<unknown[]>,
  format: 'json' | 'yaml',
  write: (text: string) => Promise<void> | void,
): Promise<void> {
  const out = new ListingWriter(format, write);
  for await (const page of pages)
    for (const object of page) {
      const added = out.add(
        () => stringifyJson(object, true),
        () => object,
      );
      if (added) await added;
    }
  await out.end();
}

/**
 * JSON with nothing to filter: values need only validating (and presenting), which a worker does
 * page by page while this thread reads the next pages and prints the validated ones, in key order.
 */
async function printValidatedPages(
  store: Store,
  prefix: string,
  out: ListingWriter,
  present: VolumePresenter | undefined,
): Promise<DecodeError[]> {
  const errors: DecodeError[] = [];
  for await (const verdict of validatedPages(store, prefix, present)) {
    errors.push(...verdictErrors(verdict));
    const added = out.addJson(verdict.text ?? '', verdict.printed);
    if (added) await added;
  }
  return errors;
}

/**
 * The cells of `get volumes`' table from the store alone, every volume decoded and turned into its
 * row on the validation worker while this thread reads the next pages (100k volumes: the decoding
 * no longer adds to the reading). Rows come in key order.
 */
export async function volumeTableRows(
  store: Store,
  space: KeySpace,
  present: VolumePresenter & { table: NonNullable<VolumePresenter['table']> },
): Promise<{ rows: string[][]; errors: DecodeError[] }> {
  const rows: string[][] = [];
  const errors: DecodeError[] = [];
  for await (const verdict of validatedPages(store, typePrefix(space, 'VolumeSpec'), present)) {
    errors.push(...verdictErrors(verdict));
    for (const row of verdict.rows ?? []) rows.push(row);
  }
  return { rows, errors };
}

/**
 * The verdicts of a prefix's pages, in key order: a worker validates each page while this thread
 * reads the next ones (two pages ahead). A first page short of the limit is the whole listing and
 * is validated here (not worth a thread).
 */
async function* validatedPages(
  store: Store,
  prefix: string,
  present: VolumePresenter | undefined,
): AsyncGenerator<PageVerdict> {
  const validator = new PageValidator(present);
  const queue: Promise<PageVerdict>[] = [];
  try {
    let first = true;
    for await (const page of readPrefixStoredPages(store, prefix)) {
      // This thread reads faster than the worker validates: while the worker has a page waiting
      // besides the one it is on, this thread validates the page itself instead of idling later.
      const here = (first && page.n < PAGE_LIMIT) || validator.backlog > 1;
      const verdict = here
        ? Promise.resolve(validatePageMessage(pageMessage(page), present))
        : validator.check(page);
      verdict.catch(() => {}); // awaited in order below
      queue.push(verdict);
      first = false;
      if (queue.length > 2) yield await queue.shift()!;
    }
    while (queue.length > 0) yield await queue.shift()!;
  } finally {
    await validator.close();
  }
}
