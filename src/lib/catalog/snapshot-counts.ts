import { type DecodeError, isStorctlError } from '../errors.js';
import { decodeRecord } from '../specs/index.js';
import { type KeySpace, typePrefix } from '../store/keys.js';
import type { Store } from '../store/types.js';
import { readPrefix } from './pages.js';

/**
 * How many snapshots each volume is the source of (REST's `num_snapshots`), read before a streamed
 * volume listing; snapshots whose value does not decode are reported, not counted.
 */
export async function countSnapshots(
  store: Store,
  space: KeySpace,
): Promise<{ counts: Record<string, number>; errors: DecodeError[] }> {
  const counts: Record<string, number> = {};
  const errors: DecodeError[] = [];
  for await (const kv of readPrefix(store, typePrefix(space, 'VolumeSnapshot'))) {
    try {
      const rec = decodeRecord(kv.key, kv.value);
      if (rec?.type === 'VolumeSnapshot') {
        const source = rec.value.spec.source_id;
        counts[source] = (counts[source] ?? 0) + 1;
      }
    } catch (err) {
      if (!isStorctlError(err) || err.code !== 'DECODE_FAILED') throw err;
      errors.push(err as DecodeError);
    }
  }
  return { counts, errors };
}
