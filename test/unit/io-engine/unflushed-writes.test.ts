import { describe, expect, it } from 'vitest';
import { MAP_SEGMENT, RebuildMap } from '../../../src/daemons/io-engine/rebuild-map.js';
import { UnflushedWrites } from '../../../src/daemons/io-engine/unflushed-writes.js';

const MiB = 1024 * 1024;
const dirtySegments = (w: UnflushedWrites, size: number) => {
  const map = new RebuildMap(size);
  w.eachRange((o, l) => map.mark(o, l));
  const segs: number[] = [];
  for (let s = 0; s < map.segments; s++) if (map.isDirty(s)) segs.push(s);
  return segs;
};

describe('the log of writes not yet flushed', () => {
  it('gives back every range written, as a list and once it is a bitmap', () => {
    const short = new UnflushedWrites(64 * MiB);
    short.mark(0, 4096);
    short.mark(10 * MAP_SEGMENT + 1, 1);
    expect(dirtySegments(short, 64 * MiB)).toEqual([0, 10]);

    // Thousands of writes between two flushes: the log turns into a bitmap and loses none.
    const long = new UnflushedWrites(1024 * MiB);
    const written: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const seg = (i * 7) % 16384;
      long.mark(seg * MAP_SEGMENT + 512, 4096);
      written.push(seg);
    }
    expect(dirtySegments(long, 1024 * MiB)).toEqual([...new Set(written)].sort((x, y) => x - y));
  });

  it('keeps its ranges when the nexus grows, and logs writes beyond the old size', () => {
    for (const writes of [1, 3000]) {
      const w = new UnflushedWrites(64 * MiB);
      for (let i = 0; i < writes; i++) w.mark(MAP_SEGMENT * 3, 100);
      w.grow(128 * MiB);
      w.mark(100 * MiB, 4096);
      expect(dirtySegments(w, 128 * MiB)).toEqual([3, (100 * MiB) / MAP_SEGMENT]);
    }
  });
});
