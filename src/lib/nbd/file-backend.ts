import { fstatSync, readSync, statSync, writeSync } from 'node:fs';
import { constants, type FileHandle, open } from 'node:fs/promises';
import { type BlockBackend, checkRange, ZERO_CHUNK } from './backend.js';
import { zeroRuns } from './zero-runs.js';

/**
 * Requests up to this size are served inline, by a synchronous pread/pwrite on this thread, while
 * those stay fast: a page-cache hit costs a few microseconds, the thread pool's round trip (queue,
 * wake a thread, wake the event loop, settle a promise) several times that, which halved 4 KiB
 * random throughput next to nbdkit's file plugin.
 */
const INLINE_MAX = 64 * 1024;
/** An inline call slower than this waited for the device (a cache miss, dirty-page throttling)... */
const INLINE_SLOW_MS = 0.25;
/**
 * ...and more than INLINE_SLOW_LIMIT of INLINE_WINDOW calls that slow mean the file is not answering
 * from memory (one slow call alone may just be this thread losing the CPU on a busy machine)...
 */
const INLINE_WINDOW = 32;
const INLINE_SLOW_LIMIT = 4;
/** ...so small requests go through the thread pool for this long, then inline is tried again. */
const INLINE_BACKOFF_MS = 1000;

/**
 * A regular (usually sparse) file as a block device. Reads and writes go straight to the kernel with
 * explicit positions, so several requests may be in flight at once; FUA becomes a datasync. Small
 * requests run inline while the file answers from memory (see INLINE_MAX); once several are slow,
 * the event loop is not held up again for a while.
 */
export class FileBackend implements BlockBackend {
  private fh: Promise<FileHandle> | null;
  /** The open handle once opened (inline I/O needs its descriptor without awaiting). */
  private opened: FileHandle | null = null;
  private closed = false;
  /** performance.now() before which small requests go through the thread pool. */
  private inlineAfter = 0;
  /** Inline calls in the current window, and how many of them were slow. */
  private inlineCalls = 0;
  private inlineSlow = 0;

  private constructor(
    fh: FileHandle | null,
    public size: number,
    readonly path: string,
  ) {
    this.fh = fh ? Promise.resolve(fh) : null;
    this.opened = fh;
  }

  /**
   * A backend over a file the caller just created, opened read-write on its first I/O: most new
   * replicas wait a while for a nexus, and the open then costs a thread-pool round trip only once.
   */
  static onFirstUse(path: string, size: number): FileBackend {
    return new FileBackend(null, size, path);
  }

  static async open(path: string, size?: number): Promise<FileBackend> {
    const fh = await open(path, constants.O_RDWR);
    const actual = size ?? (await fh.stat()).size;
    return new FileBackend(fh, actual, path);
  }

  /** The open handle; a failed open is retried by the next I/O rather than remembered. */
  private handle(): Promise<FileHandle> {
    if (this.closed)
      return Promise.reject(Object.assign(new Error(`${this.path} is closed`), { code: 'EBADF' }));
    this.fh ??= open(this.path, constants.O_RDWR).then(
      (fh) => {
        if (this.closed) void fh.close();
        else this.opened = fh;
        return fh;
      },
      (err) => {
        this.fh = null;
        throw err;
      },
    );
    return this.fh;
  }

  /** The descriptor for an inline request of `length` bytes, or null: go through the thread pool. */
  private inlineFd(length: number): number | null {
    if (length > INLINE_MAX || this.closed || !this.opened) return null;
    return performance.now() >= this.inlineAfter ? this.opened.fd : null;
  }

  /** Time one inline call; many slow ones send small requests to the thread pool for a while. */
  private timed<T>(started: number, result: T): T {
    const now = performance.now();
    if (now - started > INLINE_SLOW_MS) this.inlineSlow++;
    if (++this.inlineCalls === INLINE_WINDOW) {
      if (this.inlineSlow > INLINE_SLOW_LIMIT) this.inlineAfter = now + INLINE_BACKOFF_MS;
      this.inlineCalls = 0;
      this.inlineSlow = 0;
    }
    return result;
  }

  async read(buf: Buffer, offset: number): Promise<void> {
    checkRange(this.size, offset, buf.length);
    const fd = this.inlineFd(buf.length);
    if (fd !== null) {
      const n = this.timed(performance.now(), readSync(fd, buf, 0, buf.length, offset));
      if (n < buf.length) buf.fill(0, n); // past EOF of a file shorter than its declared size
      return;
    }
    const fh = await this.handle();
    let done = 0;
    while (done < buf.length) {
      const { bytesRead } = await fh.read(buf, done, buf.length - done, offset + done);
      if (bytesRead === 0) {
        buf.fill(0, done); // past EOF of a file shorter than its declared size
        return;
      }
      done += bytesRead;
    }
  }

  async write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    checkRange(this.size, offset, buf.length);
    const fd = fua ? null : this.inlineFd(buf.length);
    if (fd !== null) {
      const started = performance.now();
      let done = 0;
      while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, offset + done);
      this.timed(started, done);
      return;
    }
    const fh = await this.handle();
    let done = 0;
    while (done < buf.length) {
      const { bytesWritten } = await fh.write(buf, done, buf.length - done, offset + done);
      done += bytesWritten;
    }
    if (fua) await fh.datasync();
  }

  async flush(): Promise<void> {
    await (await this.handle()).datasync();
  }

  async trim(offset: number, length: number): Promise<void> {
    // Advisory; keeping the bytes keeps every mirror of this range identical.
    checkRange(this.size, offset, length);
  }

  /**
   * Zeroes only the blocks that do not read as zero yet: a hole of a thin replica stays a hole, so
   * zeroing (mkfs, a rebuild copying a volume's empty stretches) does not allocate what holds nothing.
   */
  async writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    checkRange(this.size, offset, length);
    const buf = Buffer.allocUnsafe(Math.min(ZERO_CHUNK.length, length));
    const end = offset + length;
    for (let pos = offset; pos < end; pos += buf.length) {
      const chunk = buf.subarray(0, Math.min(buf.length, end - pos));
      await this.read(chunk, pos);
      for (const run of zeroRuns(chunk))
        if (!run.zero) await this.write(ZERO_CHUNK.subarray(0, run.end - run.start), pos + run.start, false);
    }
    if (fua) await this.flush();
  }

  /** Bytes the file holds on disk now (a stat of its open descriptor, or of its path before the first I/O). */
  allocatedBytes(): number {
    const st = this.opened ? fstatSync(this.opened.fd) : statSync(this.path, { throwIfNoEntry: false });
    return (st?.blocks ?? 0) * 512;
  }

  async close(): Promise<void> {
    const fh = this.fh;
    this.closed = true;
    this.fh = null;
    this.opened = null;
    if (fh) await fh.then((h) => h.close()).catch(() => {});
  }
}
