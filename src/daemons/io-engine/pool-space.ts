import { BlockIoError } from '../../lib/nbd/backend.js';
import { Errno } from '../../lib/nbd/protocol.js';

/**
 * Within this many bytes of a pool's capacity, every thin write is measured as it lands; further
 * off, writes only count their length against the headroom last measured.
 */
const TIGHT_MARGIN = 8 * 1024 * 1024;

/**
 * Holds a pool's thin replicas to its capacity, as a disk holds Mayastor's thin lvols: a write that
 * allocates past it fails with ENOSPC. Far from full a write costs a comparison: it counts its
 * length (an upper bound of what it allocates) against the headroom measured last, and the pool is
 * measured again only when that budget is spent. Near full, each thin write is measured as it
 * lands, piece by piece (replica.ts; its file's allocation before and after): the piece that grew
 * the pool past its capacity fails the write (its bytes may be in the file, as after any failed
 * write), while overwrites of allocated blocks go on. Writes in flight at once may take the pool
 * past its capacity by a piece each.
 */
export class PoolSpace {
  /** Bytes the pool holds (thick sizes, thin and snapshot allocation), as last measured plus measured growth. */
  private reserved = 0;
  /** Bytes written by thin writes since the last measurement (counted, not measured). */
  private unmeasured = 0;
  private stale = true;
  /** Writes refused since the io-engine started (storctl_pool_writes_refused_total). */
  refused = 0;
  /** Thin writes taken so far: a pool measured at another count may hold more now. */
  writes = 0;

  constructor(
    private readonly pool: string,
    private readonly capacity: () => number,
    /** What the pool holds now, measured (synchronous: a stat per file). */
    private readonly measure: () => number,
    /** Called when a write is refused: what was said of the pool's free space is stale. */
    private readonly onFull: () => void,
  ) {}

  /** Replicas or snapshots came or went, or grew: measure before the next write. */
  invalidate(): void {
    this.stale = true;
  }

  /**
   * Before a thin write of `length` bytes: true when it fits whatever it allocates; false when the
   * pool is near full and the write must be measured (`settle`).
   */
  take(length: number): boolean {
    this.writes++;
    const room = () => this.capacity() - TIGHT_MARGIN - this.reserved - this.unmeasured;
    if (!this.stale && room() >= length) {
      this.unmeasured += length;
      return true;
    }
    if (this.stale || this.unmeasured > 0) {
      this.reserved = this.measure();
      this.unmeasured = 0;
      this.stale = false;
      if (room() >= length) {
        this.unmeasured += length;
        return true;
      }
    }
    return false;
  }

  /**
   * After a measured piece of a write: `growth` bytes it allocated. Throws ENOSPC when that took the
   * pool past its capacity, as a measurement of the whole pool confirms: pieces of one replica in
   * flight at once each see the others' growth too, so the running sum can only run high.
   */
  settle(growth: number, replica: string): void {
    if (growth <= 0) return;
    this.reserved += growth;
    const capacity = this.capacity();
    if (this.reserved <= capacity) return;
    this.reserved = this.measure();
    this.unmeasured = 0;
    this.stale = false;
    if (this.reserved <= capacity) return;
    this.refused++;
    this.onFull();
    throw new BlockIoError(
      `pool '${this.pool}' is full: a write to thin replica '${replica}' needed ${growth} more bytes, the pool holds ${this.reserved} of its ${capacity}; free space in the pool (delete volumes or snapshots) or move the replica to another pool`,
      Errno.ENOSPC,
    );
  }
}
