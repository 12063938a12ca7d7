import { clusterPrefix, type KeySpace } from '../store/keys.js';
import type { KeyValue, Store } from '../store/types.js';
import { readPrefix } from './pages.js';

/**
 * One line of a dump. The value stays the exact stored string: re-encoding JSON would lose the
 * precision of u64 fields such as `reservationKey`.
 */
export interface DumpRecord {
  key: string;
  value: string;
  create_revision: number;
  mod_revision: number;
  version: number;
  lease: string;
}

export const toDumpRecord = (kv: KeyValue): DumpRecord => ({
  key: kv.key,
  value: kv.value,
  create_revision: kv.createRevision,
  mod_revision: kv.modRevision,
  version: kv.version,
  lease: kv.lease,
});

/** Write every key of the key space, one JSON object per line; returns how many. */
export async function dumpStore(
  store: Store,
  space: KeySpace,
  write: (line: string) => void,
): Promise<number> {
  let count = 0;
  // The trailing slash keeps cluster `a` from matching cluster `ab`.
  for await (const kv of readPrefix(store, `${clusterPrefix(space)}/`)) {
    write(JSON.stringify(toDumpRecord(kv)));
    count++;
  }
  return count;
}
