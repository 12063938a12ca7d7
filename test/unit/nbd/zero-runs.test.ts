import { describe, expect, it } from 'vitest';
import { ZERO_BLOCK, zeroRuns } from '../../../src/lib/nbd/zero-runs.js';

const KiB = 1024;

describe('zeroRuns', () => {
  it('cuts a buffer into maximal runs of zero and data blocks', () => {
    const buf = Buffer.alloc(256 * KiB);
    buf[70 * KiB] = 1; // in the block at 68 KiB
    buf.fill(2, 72 * KiB, 80 * KiB); // the next two blocks
    buf[255 * KiB] = 3; // the last block
    expect(zeroRuns(buf)).toEqual([
      { start: 0, end: 68 * KiB, zero: true },
      { start: 68 * KiB, end: 80 * KiB, zero: false },
      { start: 80 * KiB, end: 252 * KiB, zero: true },
      { start: 252 * KiB, end: 256 * KiB, zero: false },
    ]);
  });

  it('handles a buffer that is not a whole number of blocks, and an empty one', () => {
    const buf = Buffer.alloc(ZERO_BLOCK + 100);
    expect(zeroRuns(buf)).toEqual([{ start: 0, end: ZERO_BLOCK + 100, zero: true }]);
    buf[ZERO_BLOCK + 99] = 9;
    expect(zeroRuns(buf)).toEqual([
      { start: 0, end: ZERO_BLOCK, zero: true },
      { start: ZERO_BLOCK, end: ZERO_BLOCK + 100, zero: false },
    ]);
    expect(zeroRuns(Buffer.alloc(0))).toEqual([]);
  });
});
