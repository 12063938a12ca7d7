import { withoutPath } from '../../lib/errno.js';

/** How long a disk error keeps its pool Degraded (ZFS keeps its counts until `zpool clear`). */
export const POOL_ERROR_WINDOW_MS = 10 * 60_000;

/** Errors that say the pool's disk or filesystem failed, not the request (nor a full pool: ENOSPC). */
const DISK_ERRORS = new Set(['EIO', 'EROFS', 'ENXIO', 'ENODEV', 'EUCLEAN']);

/**
 * The disk errors a pool's replicas met: a pool whose disk fails writes or flushes reads Degraded
 * (with the error) for POOL_ERROR_WINDOW_MS after the last one, so core places no replica there
 * (a replacement for the replica that failed would go back to the failing disk) and says why.
 */
export class PoolIoErrors {
  private last: { at: number; message: string } | null = null;

  /** Note `err` if it is a disk error; always rethrows it (use in a promise's catch). */
  readonly seen = (err: unknown): never => {
    const code = (err as NodeJS.ErrnoException)?.code;
    if (code && DISK_ERRORS.has(code))
      this.last = { at: performance.now(), message: withoutPath(err as Error) };
    throw err;
  };

  /** The last disk error within the window, as "EIO: i/o error (12 s ago)", else null. */
  recent(): string | null {
    if (!this.last) return null;
    const ago = performance.now() - this.last.at;
    if (ago > POOL_ERROR_WINDOW_MS) return null;
    return `${this.last.message} (${Math.round(ago / 1000)} s ago)`;
  }
}
