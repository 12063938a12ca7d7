import { constants, type FileHandle, open } from 'node:fs/promises';
import { type BlockBackend, checkRange, ZERO_CHUNK } from './backend.js';

/**
 * A regular (usually sparse) file as a block device. Reads and writes go straight to the kernel with
 * explicit positions, so several requests may be in flight at once; FUA becomes a datasync.
 */
export class FileBackend implements BlockBackend {
  private constructor(
    private readonly fh: FileHandle,
    public size: number,
    readonly path: string,
  ) {}

  /** A backend over a handle the caller opened read-write (e.g. while creating the file). */
  static fromHandle(fh: FileHandle, size: number, path: string): FileBackend {
    return new FileBackend(fh, size, path);
  }

  static async open(path: string, size?: number): Promise<FileBackend> {
    const fh = await open(path, constants.O_RDWR);
    const actual = size ?? (await fh.stat()).size;
    return new FileBackend(fh, actual, path);
  }

  async read(buf: Buffer, offset: number): Promise<void> {
    checkRange(this.size, offset, buf.length);
    let done = 0;
    while (done < buf.length) {
      const { bytesRead } = await this.fh.read(buf, done, buf.length - done, offset + done);
      if (bytesRead === 0) {
        buf.fill(0, done); // past EOF of a file shorter than its declared size
        return;
      }
      done += bytesRead;
    }
  }

  async write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    checkRange(this.size, offset, buf.length);
    let done = 0;
    while (done < buf.length) {
      const { bytesWritten } = await this.fh.write(buf, done, buf.length - done, offset + done);
      done += bytesWritten;
    }
    if (fua) await this.fh.datasync();
  }

  async flush(): Promise<void> {
    await this.fh.datasync();
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
    if (fua) await this.fh.datasync();
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => {});
  }
}
