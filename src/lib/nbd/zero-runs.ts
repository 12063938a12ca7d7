import { ZERO_CHUNK } from './backend.js';

/** Granularity of zero detection: a filesystem block (and a pool's cluster, as REST reports it). */
export const ZERO_BLOCK = 4096;

/** A stretch checked whole before its blocks are: most of a volume is all data or all zeroes. */
const STRETCH = 64 * 1024;

/** A stretch of a buffer, `[start, end)`, that is all zero bytes or holds data. */
export interface Run {
  start: number;
  end: number;
  zero: boolean;
}

const isZero = (buf: Buffer, start: number, end: number) =>
  buf.compare(ZERO_CHUNK, 0, end - start, start, end) === 0;

/**
 * `buf` cut into maximal runs of all-zero and of data blocks (ZERO_BLOCK each, the last one
 * shorter), in order.
 */
export function zeroRuns(buf: Buffer): Run[] {
  const runs: Run[] = [];
  const add = (start: number, end: number, zero: boolean) => {
    const last = runs[runs.length - 1];
    if (last && last.zero === zero && last.end === start) last.end = end;
    else runs.push({ start, end, zero });
  };
  for (let at = 0; at < buf.length; at += STRETCH) {
    const end = Math.min(buf.length, at + STRETCH);
    if (isZero(buf, at, end)) {
      add(at, end, true);
      continue;
    }
    for (let b = at; b < end; b += ZERO_BLOCK) {
      const e = Math.min(end, b + ZERO_BLOCK);
      add(b, e, isZero(buf, b, e));
    }
  }
  return runs;
}
