import type { CoreEvent } from '../../lib/catalog/events.js';
import { eventsPrefix, type KeySpace } from '../../lib/store/keys.js';
import type { Store } from '../../lib/store/types.js';

export type { CoreEvent };

let seq = 0;
/**
 * Event keys sort by time: `<ms epoch, 15 digits>-<per-process counter, 6 digits>`, so a prefix
 * range is the log in order and trimming deletes the oldest keys first.
 */
export function eventKey(space: KeySpace, now = Date.now()): string {
  seq = (seq + 1) % 1_000_000;
  return `${eventsPrefix(space)}${String(now).padStart(15, '0')}-${String(seq).padStart(6, '0')}`;
}

export function makeEvent(
  resource: CoreEvent['resource'],
  id: string,
  action: string,
  message: string,
): CoreEvent {
  return { time: new Date().toISOString(), resource, id, action, message };
}

/** Keys of events beyond the newest `keep` (the log is bounded). */
export async function eventsToTrim(store: Store, space: KeySpace, keep: number): Promise<string[]> {
  const { kvs } = await store.range(eventsPrefix(space));
  return kvs.length > keep ? kvs.slice(0, kvs.length - keep).map((kv) => kv.key) : [];
}
