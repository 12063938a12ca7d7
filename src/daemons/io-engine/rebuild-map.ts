/** Granularity of the rebuild map: a write anywhere in a segment makes the whole segment dirty. */
export const MAP_SEGMENT = 64 * 1024;

/**
 * Mayastor's rebuild map (a log of the regions written while a child was away): one bit per
 * MAP_SEGMENT bytes of the nexus. Kept in memory by the nexus for each child that dropped out of
 * I/O; a child that comes back is rebuilt from it (partial rebuild) instead of copied in full. It
 * does not survive a restart of the nexus's io-engine: the child is then unhealthy in NexusInfo and
 * gets a full rebuild.
 */
export class RebuildMap {
  private bits: Uint32Array;
  private dirty = 0;

  constructor(
    /** Bytes covered. */
    public size: number,
  ) {
    this.bits = new Uint32Array(Math.ceil(this.segments / 32));
  }

  get segments(): number {
    return Math.ceil(this.size / MAP_SEGMENT);
  }

  /** Dirty segments. */
  get count(): number {
    return this.dirty;
  }

  /** Bytes the dirty segments cover. */
  get dirtyBytes(): number {
    let bytes = this.dirty * MAP_SEGMENT;
    // the last segment may be short
    const last = this.segments - 1;
    if (last >= 0 && this.isDirty(last)) bytes -= this.segments * MAP_SEGMENT - this.size;
    return bytes;
  }

  isDirty(seg: number): boolean {
    return (this.bits[seg >>> 5] & (1 << (seg & 31))) !== 0;
  }

  private set(seg: number): void {
    const w = seg >>> 5;
    const m = 1 << (seg & 31);
    if ((this.bits[w] & m) === 0) {
      this.bits[w] |= m;
      this.dirty++;
    }
  }

  /** Mark [offset, offset + length) dirty. */
  mark(offset: number, length: number): void {
    if (length <= 0) return;
    const end = Math.min(this.size, offset + length);
    if (offset >= end) return;
    const last = Math.floor((end - 1) / MAP_SEGMENT);
    for (let s = Math.floor(offset / MAP_SEGMENT); s <= last; s++) this.set(s);
  }

  /** Clear the segments [from, to). */
  clear(from: number, to: number): void {
    for (let s = from; s < to; s++) {
      const w = s >>> 5;
      const m = 1 << (s & 31);
      if ((this.bits[w] & m) !== 0) {
        this.bits[w] &= ~m;
        this.dirty--;
      }
    }
  }

  /**
   * The first run of dirty segments at or after `from`, at most `max` segments long, as segment
   * indexes [start, end); null when none is left.
   */
  nextRun(from: number, max: number): [number, number] | null {
    const n = this.segments;
    let s = from;
    while (s < n) {
      const word = this.bits[s >>> 5];
      if (word === 0 && (s & 31) === 0) {
        s += 32;
        continue;
      }
      if (this.isDirty(s)) break;
      s++;
    }
    if (s >= n) return null;
    let e = s + 1;
    while (e < n && e - s < max && this.isDirty(e)) e++;
    return [s, e];
  }

  /** The nexus grew: the new range was never written to the child, so it is dirty. */
  grow(size: number): void {
    if (size <= this.size) return;
    const from = this.size;
    const old = this.bits;
    this.size = size;
    this.bits = new Uint32Array(Math.ceil(this.segments / 32));
    this.bits.set(old);
    // the old last segment may have been short: marking from `from` covers its new bytes too
    this.mark(from, size - from);
  }
}
