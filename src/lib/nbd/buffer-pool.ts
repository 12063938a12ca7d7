/**
 * Reuse of large I/O buffers (read replies, write payloads). Allocating a fresh megabyte per request
 * made the garbage collector the largest cost of sequential I/O; a small free list per size avoids it.
 */
export class BufferPool {
  private readonly free = new Map<number, Buffer[]>();

  constructor(
    /** Buffers smaller than this are not pooled (cheap to allocate). */
    private readonly minSize = 64 * 1024,
    private readonly maxPerSize = 32,
    private readonly maxSizes = 16,
  ) {}

  get(size: number): Buffer {
    if (size < this.minSize) return Buffer.allocUnsafe(size);
    return this.free.get(size)?.pop() ?? Buffer.allocUnsafeSlow(size);
  }

  /** Give back a buffer from get(); the caller must not touch it afterwards. */
  put(buf: Buffer): void {
    if (buf.length < this.minSize || buf.byteOffset !== 0 || buf.buffer.byteLength !== buf.length) return;
    let list = this.free.get(buf.length);
    if (!list) {
      if (this.free.size >= this.maxSizes) return;
      list = [];
      this.free.set(buf.length, list);
    }
    if (list.length < this.maxPerSize) list.push(buf);
  }
}
