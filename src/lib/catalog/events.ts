import { eventsPrefix, type KeySpace } from '../store/keys.js';
import type { Store } from '../store/types.js';

/** The kinds of resource an event is about (core and ha-cluster write them). */
export const EVENT_RESOURCES = [
  'volume',
  'replica',
  'nexus',
  'pool',
  'node',
  'snapshot',
  'core',
  'switchover',
] as const;

/** One lifecycle event, as core stores it and as `storctl events` shows it. */
export interface CoreEvent {
  time: string;
  resource: (typeof EVENT_RESOURCES)[number];
  id: string;
  action: string;
  message: string;
}

export interface EventFilter {
  /** Only events of this resource kind. */
  resource?: string;
  /** Only events about the resource with this id. */
  id?: string;
}

/** A stored event value; null when it is not valid JSON (skipped, never fatal). */
function parseEvent(value: string): CoreEvent | null {
  try {
    return JSON.parse(value) as CoreEvent;
  } catch {
    return null;
  }
}

function matches(e: CoreEvent | null, filter: EventFilter): e is CoreEvent {
  return !!e && (!filter.resource || e.resource === filter.resource) && (!filter.id || e.id === filter.id);
}

/** The newest `limit` events that pass the filter, oldest first, and the revision they were read at. */
export async function listEvents(
  store: Store,
  space: KeySpace,
  filter: EventFilter & { limit: number },
): Promise<{ events: CoreEvent[]; revision: number }> {
  const { kvs, revision } = await store.range(eventsPrefix(space));
  const events = kvs
    .map((kv) => parseEvent(kv.value))
    .filter((e) => matches(e, filter))
    .slice(-filter.limit);
  return { events, revision };
}

/**
 * Deliver every new event passing the filter, from `fromRevision` on, until `signal` aborts; then the
 * watch is closed and the promise resolves.
 */
export async function followEvents(
  store: Store,
  space: KeySpace,
  options: EventFilter & {
    fromRevision: number;
    signal: AbortSignal;
    onEvent: (e: CoreEvent) => void;
    onError: (err: Error) => void;
  },
): Promise<void> {
  const watch = await store.watch(eventsPrefix(space), { fromRevision: options.fromRevision });
  await new Promise<void>((resolve) => {
    watch.on('event', (ev) => {
      if (ev.type !== 'put') return;
      const e = parseEvent(ev.kv.value);
      if (matches(e, options)) options.onEvent(e);
    });
    watch.on('error', options.onError);
    if (options.signal.aborted) resolve();
    else options.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await watch.close();
}

// Seeded per process: core and ha-cluster both write the log, and must not write the same key.
let seq = (process.pid * 7919) % 1_000_000;
/** The time of the newest event key this process wrote or saw: keys never go back from it. */
let keyFloor = 0;
/**
 * Event keys sort by time: `<ms epoch, 15 digits>-<per-process counter, 6 digits>`, so a prefix
 * range is the log in order and trimming deletes the oldest keys first. After a step of the wall
 * clock back, a key takes the newest time seen instead (the event's own `time` says the clock's):
 * keyed by the clock, new events sorted before the old ones, `storctl events` hid them and the
 * trimming of the log deleted them first.
 */
export function eventKey(space: KeySpace, now = Date.now()): string {
  seq = (seq + 1) % 1_000_000;
  keyFloor = Math.max(keyFloor, now);
  return `${eventsPrefix(space)}${String(keyFloor).padStart(15, '0')}-${String(seq).padStart(6, '0')}`;
}

/** The newest event key in the store (read by core's trimming): this process's keys come after it. */
export function seeEventKey(key: string): void {
  const time = Number(key.slice(key.lastIndexOf('/') + 1).split('-')[0]);
  if (Number.isSafeInteger(time)) keyFloor = Math.max(keyFloor, time);
}

export function makeEvent(
  resource: CoreEvent['resource'],
  id: string,
  action: string,
  message: string,
): CoreEvent {
  return { time: new Date().toISOString(), resource, id, action, message };
}
