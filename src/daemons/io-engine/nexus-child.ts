import { type BlockBackend, BlockIoError } from '../../lib/nbd/backend.js';
import type { RebuildMap } from './rebuild-map.js';
import type { UnflushedWrites } from './unflushed-writes.js';

/** Mayastor's child states: Online (in I/O), Degraded (being rebuilt), Faulted (dropped from I/O). */
export type ChildState = 'Online' | 'Degraded' | 'Faulted';

/** An open connection to a child's storage and how to let go of it. */
export interface ChildConnection {
  backend: BlockBackend;
  /** Detach from the backend (close the NBD connection; a local replica stays open). */
  detach: () => Promise<void>;
}

/** One mirror leg of a nexus: a local replica or a remote one over NBD. */
export class NexusChild {
  state: ChildState;
  reason = '';
  /** When the child last went Faulted (ms since the epoch): core's faulted-child wait counts from it. */
  faultedAt = 0;
  /** While fully rebuilding: bytes [0, cursor) hold the source's content and receive every write. */
  rebuildCursor = 0;
  /** When the current or last rebuild started and, once it has, ended (ms since the epoch). */
  rebuildStartedAt: number | null = null;
  rebuildEndedAt: number | null = null;
  /**
   * The regions written while this child was out of I/O (Faulted) or not yet copied back (Degraded
   * in a partial rebuild). Created the moment the child is faulted, so no write is missed; null when
   * the child has no log (never faulted, or a full rebuild is needed).
   */
  rebuildMap: RebuildMap | null = null;
  /**
   * What the current rebuild copied to the child since it last flushed the child: on the child's
   * disk only once that flush succeeds (see UnflushedWrites), so a child that faults copies it again.
   */
  unflushedCopies: UnflushedWrites | null = null;
  /** The current (Degraded) or last rebuild: partial (from the rebuild map) or full. */
  rebuildPartial = false;
  /** Bytes the current or last rebuild has to copy / has copied. */
  rebuildTotal = 0;
  rebuildCopied = 0;
  /** Of those, bytes of data written to the child (its zero stretches were zeroed instead). */
  rebuildTransferred = 0;
  /**
   * Remote children only: open a fresh connection to the same URI. An NBD client learns the export
   * size at connect, so a grown replica is only seen through a new connection (nexus resize).
   */
  reopen: (() => Promise<ChildConnection>) | null = null;

  constructor(
    readonly uri: string,
    readonly uuid: string,
    public backend: BlockBackend,
    /** Detach from the backend (close the NBD connection; a local replica stays open). */
    public detach: () => Promise<void>,
    state: ChildState,
  ) {
    this.state = state;
    if (state === 'Faulted') this.faultedAt = Date.now();
  }

  /** Serve from `next` from now on; the caller detaches the previous connection. */
  swap(next: ChildConnection): ChildConnection {
    const previous = { backend: this.backend, detach: this.detach };
    this.backend = next.backend;
    this.detach = next.detach;
    return previous;
  }

  /**
   * A child its nexus could not connect to when created: Faulted from the start, with why, so core
   * treats it as any faulted child (waits for it, adds it back with a full rebuild, or replaces it).
   */
  static unreachable(uri: string, uuid: string, size: number, reason: string): NexusChild {
    const fail = () => Promise.reject(new BlockIoError(reason));
    const backend: BlockBackend = {
      size,
      connectionLost: true,
      read: fail,
      write: fail,
      flush: fail,
      trim: fail,
      writeZeroes: fail,
    };
    const child = new NexusChild(uri, uuid, backend, async () => {}, 'Faulted');
    child.reason = reason;
    return child;
  }

  get healthy(): boolean {
    return this.state === 'Online';
  }
}
