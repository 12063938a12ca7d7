/**
 * Bytes received from a socket, consumed in protocol-sized pieces. Pieces that lie inside one
 * received chunk are returned as views (no copy); only pieces spanning chunks are copied.
 */
export class ByteQueue {
  private chunks: Buffer[] = [];
  private head = 0; // offset into chunks[0]
  length = 0;

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  /** Remove and return the next `n` bytes (caller checked `length >= n`). */
  take(n: number): Buffer {
    const first = this.chunks[0];
    if (first.length - this.head >= n) {
      const out = first.subarray(this.head, this.head + n);
      this.advance(n);
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0];
      const k = Math.min(c.length - this.head, n - filled);
      c.copy(out, filled, this.head, this.head + k);
      filled += k;
      this.advance(k);
    }
    return out;
  }

  /** Copy the next `n` bytes into `target` at `at`, consuming them. */
  takeInto(target: Buffer, at: number, n: number): void {
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0];
      const k = Math.min(c.length - this.head, n - filled);
      c.copy(target, at + filled, this.head, this.head + k);
      filled += k;
      this.advance(k);
    }
  }

  /**
   * Copy what is left into a buffer of its own: the chunks pushed may be views of a read buffer the
   * socket reuses for its next read.
   */
  detach(): void {
    if (this.length === 0) return;
    const rest = Buffer.allocUnsafe(this.length);
    this.takeInto(rest, 0, this.length);
    this.push(rest);
  }

  private advance(n: number): void {
    this.head += n;
    this.length -= n;
    if (this.head === this.chunks[0].length) {
      this.chunks.shift();
      this.head = 0;
    }
  }
}
