import { MAP_SEGMENT, RebuildMap } from './rebuild-map.js';

/** Ranges kept as a list before the log becomes a bitmap (which costs size / 512 KiB bytes). */
const LIST_LIMIT = 1024;

/**
 * The regions a nexus wrote since a flush began. A child that took them may hold them only in its
 * page cache until that flush succeeds on it: a failed writeback (the flush's EIO) loses them from
 * its disk while the cache still serves them. So a child that faults gets them in its rebuild map,
 * and a partial rebuild copies them back, not only the writes it missed afterwards. A short list of
 * ranges (a new log at every flush costs nothing), a bitmap once the list is long.
 */
export class UnflushedWrites {
  private ranges: number[] = [];
  private map: RebuildMap | null = null;

  constructor(private size: number) {}

  mark(offset: number, length: number): void {
    if (this.map) {
      this.map.mark(offset, length);
      return;
    }
    this.ranges.push(offset, length);
    if (this.ranges.length < 2 * LIST_LIMIT) return;
    this.map = this.bitmap(this.size);
    this.ranges = [];
  }

  /** Every marked range, as `fn(offset, length)` (a bitmap's at segment granularity). */
  eachRange(fn: (offset: number, length: number) => void): void {
    const map = this.map;
    if (!map) {
      for (let i = 0; i < this.ranges.length; i += 2) fn(this.ranges[i], this.ranges[i + 1]);
      return;
    }
    for (let run = map.nextRun(0, Infinity); run; run = map.nextRun(run[1], Infinity))
      fn(run[0] * MAP_SEGMENT, (run[1] - run[0]) * MAP_SEGMENT);
  }

  /**
   * The nexus grew: later writes may lie beyond the old size. (Not RebuildMap.grow, which marks the
   * new range: nothing was written there yet.)
   */
  grow(size: number): void {
    if (size <= this.size) return;
    this.size = size;
    if (this.map) this.map = this.bitmap(size);
  }

  /** A bitmap of `size` bytes holding every range marked so far. */
  private bitmap(size: number): RebuildMap {
    const map = new RebuildMap(size);
    this.eachRange((o, l) => map.mark(o, l));
    return map;
  }
}
