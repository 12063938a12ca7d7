import { type DecodeError, isStorctlError } from '../errors.js';
import { toYaml } from '../output/yaml.js';
import { codecFor, decodeRecord, type SpecType, type SpecTypes } from '../specs/index.js';
import { type KeySpace, typePrefix } from '../store/keys.js';
import type { KeyValue, Store } from '../store/types.js';
import { PageValidator, type PageVerdict, validatePage, verdictErrors } from './page-validator.js';
import { PAGE_LIMIT, readPrefix, readPrefixPages } from './pages.js';

/**
 * `-o json|yaml` of a plain spec listing, streamed: each stored value is decoded (validated),
 * printed and dropped, in key order, so listing 100k volumes needs the memory of one page. JSON is
 * an array with one compact object per line, each the stored value as is.
 */
export async function streamSpecs<K extends SpecType>(
  store: Store,
  space: KeySpace,
  type: K,
  format: 'json' | 'yaml',
  write: (text: string) => Promise<void> | void,
  filter?: (value: SpecTypes[K]) => boolean,
): Promise<DecodeError[]> {
  const errors: DecodeError[] = [];
  let count = 0;
  let chunk = '';
  const emit = (text: string) => {
    chunk += text;
  };
  /**
   * Hand a full chunk to `write`; the promise (when there is one) resolves once the reader took it,
   * so a slow reader holds up the listing instead of filling memory.
   */
  const flush = (): Promise<void> | undefined => {
    if (chunk.length < 65536) return undefined;
    const text = chunk;
    chunk = '';
    return Promise.resolve(write(text));
  };
  const prefix = typePrefix(space, type);
  const print = (value: string) => {
    emit(`${count === 0 ? '[\n' : ',\n'}${value}`);
    count++;
  };
  if (format === 'json' && !filter) {
    errors.push(...(await printValidatedPages(store, prefix, print, flush)));
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
      if (format === 'json') print(kv.value);
      else {
        emit(`${toYaml([codecFor(type).toJson(value)]).trimEnd()}\n`);
        count++;
      }
      const flushed = flush();
      if (flushed) await flushed;
    }
  }
  if (format === 'json') emit(count === 0 ? '[]\n' : '\n]\n');
  else if (count === 0) emit('[]\n');
  if (chunk) await write(chunk);
  return errors;
}

/**
 * JSON with nothing to filter: values need only validating, which a worker does page by page while
 * this thread reads the next pages and prints the validated ones, in key order. A first page short
 * of the limit is the whole listing and is validated here (not worth a thread).
 */
async function printValidatedPages(
  store: Store,
  prefix: string,
  print: (value: string) => void,
  flush: () => Promise<void> | undefined,
): Promise<DecodeError[]> {
  const errors: DecodeError[] = [];
  const validator = new PageValidator();
  const queue: { kvs: KeyValue[]; verdict: Promise<PageVerdict> }[] = [];
  const printNext = async () => {
    const { kvs, verdict } = queue.shift()!;
    const v = await verdict;
    const skip = new Set(v.skip);
    errors.push(...verdictErrors(v));
    for (let i = 0; i < kvs.length; i++) {
      if (skip.has(i)) continue;
      print(kvs[i].value);
      const flushed = flush();
      if (flushed) await flushed;
    }
  };
  try {
    let first = true;
    for await (const kvs of readPrefixPages(store, prefix)) {
      const verdict =
        first && kvs.length < PAGE_LIMIT
          ? Promise.resolve(
              validatePage(
                kvs.map((kv) => kv.key),
                kvs.map((kv) => kv.value),
              ),
            )
          : validator.check(kvs);
      verdict.catch(() => {}); // awaited in order by printNext
      queue.push({ kvs, verdict });
      first = false;
      if (queue.length > 2) await printNext();
    }
    while (queue.length > 0) await printNext();
  } finally {
    await validator.close();
  }
  return errors;
}
