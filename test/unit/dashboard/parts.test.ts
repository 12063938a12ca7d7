import { describe, expect, it } from 'vitest';
import { poolBar } from '../../../src/lib/dashboard/bar.js';
import { clip, columnWidths, fitLine } from '../../../src/lib/dashboard/layout.js';
import { visibleWindow } from '../../../src/lib/dashboard/window.js';

describe('dashboard parts', () => {
  it('a pool bar: used, committed beyond used, free; ? without capacity; ! when overcommitted', () => {
    expect(poolBar(25, 50, 100, 8)).toBe('██▒▒░░░░');
    expect(poolBar(undefined, 50, undefined, 4)).toBe('????');
    expect(poolBar(50, 300, 100, 6)).toBe('███▒▒!');
  });

  it('the window keeps the selection in view and moves as little as possible', () => {
    expect(visibleWindow(10_000, 0, 14)).toEqual({ start: 0, end: 14 });
    expect(visibleWindow(10_000, 14, 14, 0)).toEqual({ start: 1, end: 15 });
    expect(visibleWindow(10_000, 5, 14, 3)).toEqual({ start: 3, end: 17 });
    expect(visibleWindow(10_000, 9_999, 14, 0)).toEqual({ start: 9_986, end: 10_000 });
    expect(visibleWindow(5, 4, 14)).toEqual({ start: 0, end: 5 });
  });

  it('lines are cut to the width, never wrapped', () => {
    const widths = columnWidths([{ header: 'A', width: 4 }, { header: 'B' }], 10);
    expect(widths).toEqual([4, 6]);
    expect(fitLine(['abcdef', 'xyz'], widths, 10)).toBe('abc xyz');
    expect(clip('0123456789abc', 10)).toBe('012345678…');
  });
});
