import { readPrefix } from '../catalog/pages.js';
import { type DecodeError, isStorctlError } from '../errors.js';
import { type DecodedRecord, decodeRecord } from '../specs/index.js';
import { clusterPrefix, eventsPrefix, type KeySpace } from '../store/keys.js';
import type { Store } from '../store/types.js';

/** A decoded record with the revisions a pending-operation age and a guarded fix need. */
export interface ScannedRecord {
  record: DecodedRecord;
  modRevision: number;
}

/** One event of core's log: when it was written (from its key) and at which revision. */
export interface EventMark {
  time: number;
  revision: number;
}

export interface StoreScan {
  revision: number;
  keys: number;
  records: ScannedRecord[];
  /** Every value that did not decode, whatever its type. */
  errors: DecodeError[];
  /** Core's events, oldest first: they date the revisions around them. */
  events: EventMark[];
}

/**
 * Every key of the cluster, decoded by the codec its key names (what `store load` would check), one
 * page at a time. Keys without a codec (liveness, events, lock keys) are counted and skipped.
 */
export async function scanStore(store: Store, space: KeySpace): Promise<StoreScan> {
  const revision = await store.revision();
  const out: StoreScan = { revision, keys: 0, records: [], errors: [], events: [] };
  const events = eventsPrefix(space);
  for await (const kv of readPrefix(store, `${clusterPrefix(space)}/`)) {
    out.keys++;
    if (kv.key.startsWith(events)) {
      // `<ms epoch>-<counter>`: the key says when core wrote it.
      const time = Number(kv.key.slice(events.length).split('-')[0]);
      if (Number.isFinite(time)) out.events.push({ time, revision: kv.createRevision });
      continue;
    }
    try {
      const record = decodeRecord(kv.key, kv.value);
      if (record) out.records.push({ record, modRevision: kv.modRevision });
    } catch (err) {
      if (isStorctlError(err) && err.code === 'DECODE_FAILED') out.errors.push(err as DecodeError);
      else throw err;
    }
  }
  out.events.sort((a, b) => a.revision - b.revision);
  return out;
}

/**
 * How long ago a revision was written, from the events around it: the event written in the same
 * transaction dates it exactly; otherwise the next event bounds it from below ("at least") and the
 * previous one from above ("at most"). Null when no event is near (a store without core's log).
 */
export function ageOfRevision(
  events: EventMark[],
  revision: number,
  now = Date.now(),
): { ms: number; bound: 'exact' | 'at least' | 'at most' } | null {
  let before: EventMark | undefined;
  let after: EventMark | undefined;
  for (const e of events) {
    if (e.revision === revision) return { ms: Math.max(0, now - e.time), bound: 'exact' };
    if (e.revision < revision) before = e;
    else {
      after = e;
      break;
    }
  }
  if (after) return { ms: Math.max(0, now - after.time), bound: 'at least' };
  if (before) return { ms: Math.max(0, now - before.time), bound: 'at most' };
  return null;
}
