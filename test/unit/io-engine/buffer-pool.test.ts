import { describe, expect, it, vi } from 'vitest';
import { BufferPool } from '../../../src/lib/nbd/buffer-pool.js';
import { IO_BUFFER_LEAD } from '../../../src/lib/nbd/io-buffer.js';

const KiB = 1024;

describe('BufferPool', () => {
  it('hands back as many buffers as were in flight at once, not a fixed count per size', () => {
    const pool = new BufferPool(64 * 1024 * KiB);
    // nbdcopy's pattern: 64 reads of 256 KiB in flight, then the next 64.
    const first = Array.from({ length: 64 }, () => pool.get(256 * KiB));
    for (const b of first) pool.put(b);
    const second = Array.from({ length: 64 }, () => pool.get(256 * KiB));
    expect(new Set(second)).toEqual(new Set(first));
  });

  it('hands out buffers that start IO_BUFFER_LEAD into their memory, not on its page boundary; takes back only whole ones', () => {
    const pool = new BufferPool(64 * 1024 * KiB);
    const b = pool.get(256 * KiB);
    expect(b.length).toBe(256 * KiB);
    expect(b.byteOffset).toBe(IO_BUFFER_LEAD);
    expect(b.buffer.byteLength).toBe(256 * KiB + IO_BUFFER_LEAD);
    // A view of part of a pooled buffer, or a buffer from elsewhere, is not pooled.
    const view = pool.get(256 * KiB).subarray(0, 128 * KiB);
    pool.put(view);
    pool.put(Buffer.allocUnsafeSlow(128 * KiB));
    expect(pool.bytes).toBe(0);
    pool.put(b);
    expect(pool.get(256 * KiB)).toBe(b);
  });

  it('keeps no more than its byte bound free; the rest is left to the GC', () => {
    const pool = new BufferPool(1024 * KiB);
    const bufs = Array.from({ length: 6 }, () => pool.get(256 * KiB));
    for (const b of bufs) pool.put(b);
    const again = Array.from({ length: 6 }, () => pool.get(256 * KiB));
    expect(again.filter((b) => bufs.includes(b))).toHaveLength(4);
  });

  it('makes room for the current workload by dropping the sizes least recently asked for', () => {
    const pool = new BufferPool(2048 * KiB);
    const earlier = Array.from({ length: 2 }, () => pool.get(1024 * KiB));
    for (const b of earlier) pool.put(b); // the bound is full of 1 MiB buffers
    const now = Array.from({ length: 4 }, () => pool.get(256 * KiB));
    for (const b of now) pool.put(b);
    const again = Array.from({ length: 4 }, () => pool.get(256 * KiB));
    expect(new Set(again)).toEqual(new Set(now));
    // One 1 MiB buffer made room for the four of 256 KiB; the other is still there.
    expect(earlier).toContain(pool.get(1024 * KiB));
    expect(earlier).not.toContain(pool.get(1024 * KiB));
  });

  it('lets go of every buffer once unused for its idle time, and pools again afterwards', () => {
    vi.useFakeTimers();
    try {
      const pool = new BufferPool(64 * 1024 * KiB, 64 * KiB, 16, 50);
      const first = pool.get(256 * KiB);
      pool.put(first);
      expect(pool.bytes).toBe(256 * KiB);
      // In use (a get and a put within every idle period) it keeps its buffers...
      for (let i = 0; i < 10; i++) {
        vi.advanceTimersByTime(30);
        const b = pool.get(256 * KiB);
        expect(b).toBe(first);
        pool.put(b);
      }
      // ...and left alone for two periods (the first sees the last use) it drops them.
      vi.advanceTimersByTime(50);
      expect(pool.bytes).toBe(256 * KiB);
      vi.advanceTimersByTime(50);
      expect(pool.bytes).toBe(0);
      expect(pool.get(256 * KiB)).not.toBe(first);
      pool.put(pool.get(128 * KiB));
      expect(pool.bytes).toBe(128 * KiB);
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not pool small buffers or views into another buffer', () => {
    const pool = new BufferPool();
    const small = pool.get(4 * KiB);
    pool.put(small);
    expect(pool.get(4 * KiB)).not.toBe(small);
    const big = Buffer.allocUnsafeSlow(512 * KiB);
    const view = big.subarray(0, 256 * KiB);
    pool.put(view);
    expect(pool.get(256 * KiB)).not.toBe(view);
  });
});
