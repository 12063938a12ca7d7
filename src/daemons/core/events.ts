import { seeEventKey } from '../../lib/catalog/events.js';
import { eventsPrefix, type KeySpace } from '../../lib/store/keys.js';
import type { Store } from '../../lib/store/types.js';

export { type CoreEvent, eventKey, makeEvent } from '../../lib/catalog/events.js';

/** Keys of events beyond the newest `keep` (the log is bounded). */
export async function eventsToTrim(store: Store, space: KeySpace, keep: number): Promise<string[]> {
  const { kvs } = await store.range(eventsPrefix(space));
  if (kvs.length) seeEventKey(kvs[kvs.length - 1].key);
  return kvs.length > keep ? kvs.slice(0, kvs.length - keep).map((kv) => kv.key) : [];
}
