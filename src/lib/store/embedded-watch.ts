import { EventEmitter } from 'node:events';
import type { EventRow } from './embedded-db.js';
import type { KeyValue, Watch, WatchEvent } from './types.js';

/** Where a watch stands in the history: every event at or before (rev, sub) has been delivered. */
export interface WatchCursor {
  rev: number;
  sub: number;
}

/** Past every sub-revision: the whole revision is done. */
export const WHOLE_REVISION = Number.MAX_SAFE_INTEGER;

/** What a watch reads from the database in one consistent snapshot. */
export interface HistoryPage {
  compactRevision: number;
  /** Store revision of the snapshot. */
  revision: number;
  events: EventRow[];
  /** False when the page was cut at the limit and more events follow. */
  complete: boolean;
}

export type ReadHistory = (prefixFrom: string, prefixEnd: string, after: WatchCursor) => HistoryPage;

/**
 * A prefix watch on the embedded store. The store pumps it whenever the revision moved (at once for
 * writes of this process, by polling for other processes); the cursor makes delivery exactly-once.
 */
export class EmbeddedWatch extends EventEmitter implements Watch {
  private cursor: WatchCursor;
  private closed = false;
  lastRevision: number;

  constructor(
    private readonly from: string,
    private readonly end: string,
    startRevision: number,
    private readonly onClose: (w: EmbeddedWatch) => void,
  ) {
    super();
    this.cursor = { rev: startRevision - 1, sub: WHOLE_REVISION };
    this.lastRevision = startRevision - 1;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Deliver every new event; returns when caught up with the snapshot. */
  pump(read: ReadHistory): void {
    while (!this.closed) {
      let page: HistoryPage;
      try {
        page = read(this.from, this.end, this.cursor);
      } catch (err) {
        // Transient (a busy or closed database): the next tick retries.
        if (this.listenerCount('error') > 0) this.emit('error', err as Error);
        return;
      }
      const needed = this.cursor.sub === WHOLE_REVISION ? this.cursor.rev + 1 : this.cursor.rev;
      if (needed < page.compactRevision) {
        this.emit('compacted', page.compactRevision);
        void this.close();
        return;
      }
      for (const row of page.events) {
        if (this.closed) return;
        this.cursor = { rev: row.rev, sub: row.sub };
        this.lastRevision = row.rev;
        this.emit('event', toWatchEvent(row));
      }
      if (page.complete) {
        // Nothing else in range up to the snapshot revision: later compactions cannot affect us.
        this.cursor = { rev: Math.max(page.revision, this.cursor.rev), sub: WHOLE_REVISION };
        return;
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose(this);
  }
}

function toWatchEvent(row: EventRow): WatchEvent {
  const prev: KeyValue | undefined =
    row.prev_value === null
      ? undefined
      : {
          key: row.key,
          value: row.prev_value,
          createRevision: row.prev_create!,
          modRevision: row.prev_mod!,
          version: row.prev_version!,
          lease: row.prev_lease!.toString(16),
        };
  if (row.deleted) {
    return prev
      ? { type: 'delete', key: row.key, modRevision: row.rev, prev }
      : { type: 'delete', key: row.key, modRevision: row.rev };
  }
  const kv: KeyValue = {
    key: row.key,
    value: row.value!,
    createRevision: row.create_rev!,
    modRevision: row.rev,
    version: row.version!,
    lease: row.lease!.toString(16),
  };
  return prev ? { type: 'put', kv, prev } : { type: 'put', kv };
}
