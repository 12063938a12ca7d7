import { stringify } from 'yaml';
import { type DecodeError, isStorctlError } from '../errors.js';
import { codecFor, decodeRecord, type SpecType, type SpecTypes } from '../specs/index.js';
import { type KeySpace, typePrefix } from '../store/keys.js';
import type { Store } from '../store/types.js';
import { readPrefix } from './pages.js';

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
  write: (text: string) => void,
  filter?: (value: SpecTypes[K]) => boolean,
): Promise<DecodeError[]> {
  const errors: DecodeError[] = [];
  let count = 0;
  let chunk = '';
  const emit = (text: string) => {
    chunk += text;
    if (chunk.length >= 65536) {
      write(chunk);
      chunk = '';
    }
  };
  for await (const kv of readPrefix(store, typePrefix(space, type))) {
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
    if (format === 'json') emit(`${count === 0 ? '[\n' : ',\n'}${kv.value}`);
    else emit(`${stringify([codecFor(type).toJson(value)]).trimEnd()}\n`);
    count++;
  }
  if (format === 'json') emit(count === 0 ? '[]\n' : '\n]\n');
  else if (count === 0) emit('[]\n');
  if (chunk) write(chunk);
  return errors;
}
