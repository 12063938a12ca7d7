import { ioBuffer, isWholeIoBuffer } from './io-buffer.js';

/**
 * Reuse of large I/O buffers (read replies, write payloads). Allocating a fresh buffer per request
 * made the garbage collector the largest cost of I/O: every fresh megabyte is external memory V8
 * collects for, and its pages fault in on first touch. The free lists are bounded by bytes, not by
 * count, so that as many buffers as a client keeps in flight are reused (nbdcopy keeps 64 reads of
 * 256 KiB; a list of 32 per size let half of them be allocated anew, and the GC took a tenth of
 * the io-engine's time). When the bound is reached, the sizes least recently asked for make room:
 * one pool serves every client of a server, and what an earlier workload left must not keep the
 * current one from being pooled. A pool left unused for `idleMs` lets go of everything: a node runs
 * one path proxy per staged volume, and an idle one should not sit on its last burst's buffers.
 */
export class BufferPool {
  private readonly free = new Map<number, Buffer[]>();
  private pooledBytes = 0;
  /** Armed while buffers are pooled; `used` says whether get/put ran since it last fired. */
  private idleTimer: NodeJS.Timeout | null = null;
  private used = false;

  constructor(
    /** Most bytes kept free at once; what is given back beyond it is left to the GC. */
    private readonly maxBytes = 64 * 1024 * 1024,
    /** Buffers smaller than this are not pooled (cheap to allocate). */
    private readonly minSize = 64 * 1024,
    private readonly maxSizes = 16,
    private readonly idleMs = 10_000,
  ) {}

  /** Bytes held free now. */
  get bytes(): number {
    return this.pooledBytes;
  }

  get(size: number): Buffer {
    if (size < this.minSize) return Buffer.allocUnsafe(size);
    this.used = true;
    const list = this.recent(size);
    const buf = list.pop();
    if (!buf) return ioBuffer(size);
    this.pooledBytes -= size;
    return buf;
  }

  /** Give back a buffer from get(); the caller must not touch it afterwards. */
  put(buf: Buffer): void {
    const size = buf.length;
    if (size < this.minSize || !isWholeIoBuffer(buf)) return;
    const list = this.recent(size);
    // Map order is recency: the first entries are the sizes least recently asked for.
    for (const [other, stale] of this.free) {
      if (other === size) break;
      while (stale.length && this.pooledBytes + size > this.maxBytes) {
        stale.pop();
        this.pooledBytes -= other;
      }
      if (this.pooledBytes + size <= this.maxBytes) break;
    }
    if (this.pooledBytes + size > this.maxBytes) return;
    list.push(buf);
    this.pooledBytes += size;
    this.used = true;
    this.idleTimer ??= setTimeout(() => this.onIdleCheck(), this.idleMs).unref();
  }

  private onIdleCheck(): void {
    this.idleTimer = null;
    if (!this.used) {
      this.free.clear();
      this.pooledBytes = 0;
      return;
    }
    this.used = false;
    if (this.pooledBytes > 0) this.idleTimer = setTimeout(() => this.onIdleCheck(), this.idleMs).unref();
  }

  /** The free list of `size`, marked as the most recently used one (created when missing). */
  private recent(size: number): Buffer[] {
    let list = this.free.get(size);
    if (list) this.free.delete(size);
    else {
      list = [];
      if (this.free.size >= this.maxSizes) {
        const [oldest, stale] = this.free.entries().next().value as [number, Buffer[]];
        this.pooledBytes -= oldest * stale.length;
        this.free.delete(oldest);
      }
    }
    this.free.set(size, list);
    return list;
  }
}
