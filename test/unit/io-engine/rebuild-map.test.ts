import { describe, expect, it } from 'vitest';
import { MAP_SEGMENT, RebuildMap } from '../../../src/daemons/io-engine/rebuild-map.js';

const S = MAP_SEGMENT;

/** Every run nextRun yields from the start, as segment ranges. */
const runs = (m: RebuildMap, max = 1 << 30) => {
  const out: [number, number][] = [];
  for (let r = m.nextRun(0, max); r; r = m.nextRun(r[1], max)) out.push(r);
  return out;
};

describe('rebuild map', () => {
  it('marks every segment a write touches, however it straddles them', () => {
    const m = new RebuildMap(100 * S);
    m.mark(S - 1, 2); // the last byte of segment 0 and the first of segment 1
    m.mark(10 * S, S); // exactly segment 10
    m.mark(40 * S + 5, 3 * S); // 40..43
    expect(runs(m)).toEqual([
      [0, 2],
      [10, 11],
      [40, 44],
    ]);
    expect(m.count).toBe(7);
    m.mark(0, 0); // nothing
    m.mark(S, 1); // already dirty
    expect(m.count).toBe(7);
  });

  it('yields runs at most `max` long and across 32-bit words; clear empties them', () => {
    const m = new RebuildMap(200 * S);
    m.mark(30 * S, 70 * S); // 30..99, across words
    expect(runs(m, 16).map(([s, e]) => e - s)).toEqual([16, 16, 16, 16, 6]);
    m.clear(30, 50);
    expect(runs(m)).toEqual([[50, 100]]);
    m.clear(0, 200);
    expect(m.count).toBe(0);
    expect(m.nextRun(0, 16)).toBeNull();
  });

  it('counts the short last segment by its real length and marks a grown range dirty', () => {
    const m = new RebuildMap(10 * S + 100);
    m.mark(10 * S, 1);
    expect(m.dirtyBytes).toBe(100);
    m.clear(10, 11);
    m.grow(20 * S);
    expect(runs(m)).toEqual([[10, 20]]);
    m.mark(20 * S, S); // past the end: ignored
    expect(m.segments).toBe(20);
    expect(m.dirtyBytes).toBe(10 * S);
  });
});
