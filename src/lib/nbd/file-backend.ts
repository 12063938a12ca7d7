import { constants, type FileHandle, open } from 'node:fs/promises';
import { type BlockBackend, checkRange, ZERO_CHUNK } from './backend.js';

/**
 * A regular (usually sparse) file as a block device. Reads and writes go straight to the kernel with
 * explicit positions, so several requests may be in flight at once; FUA becomes a datasync.
 */
export class FileBackend implements BlockBackend {
  private fh: Promise<FileHandle> | null;
  private closed = false;

  private constructor(
    fh: FileHandle | null,
    public size: number,
    readonly path: string,
  ) {
    this.fh = fh ? Promise.resolve(fh) : null;
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
    this.fh ??= open(this.path, constants.O_RDWR).catch((err) => {
      this.fh = null;
      throw err;
    });
    return this.fh;
  }

  async read(buf: Buffer, offset: number): Promise<void> {
    checkRange(this.size, offset, buf.length);
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

  async writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    checkRange(this.size, offset, length);
    let pos = offset;
    const end = offset + length;
    while (pos < end) {
      const n = Math.min(ZERO_CHUNK.length, end - pos);
      await this.write(ZERO_CHUNK.subarray(0, n), pos, false);
      pos += n;
    }
    if (fua) await this.flush();
  }

  async close(): Promise<void> {
    const fh = this.fh;
    this.closed = true;
    this.fh = null;
    if (fh) await fh.then((h) => h.close()).catch(() => {});
  }
}
