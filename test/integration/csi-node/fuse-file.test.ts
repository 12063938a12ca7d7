import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { FuseFileServer } from '../../../src/lib/fuse/file-server.js';
import { isMountPoint, unmountAll } from '../../../src/lib/mount/unmount.js';
import { type BlockBackend, BlockIoError } from '../../../src/lib/nbd/backend.js';
import { FileBackend } from '../../../src/lib/nbd/file-backend.js';

const exec = promisify(execFile);
const MiB = 1 << 20;
const SIZE = 64 * MiB;

/** A real file backend whose flushes, trims and zeroings are recorded, and whose reads can be made to fail. */
class RecordingBackend implements BlockBackend {
  readonly calls: string[] = [];
  failReads = false;
  constructor(private readonly inner: FileBackend) {}
  get size() {
    return this.inner.size;
  }
  read(buf: Buffer, offset: number) {
    if (this.failReads) return Promise.reject(new BlockIoError('the target is gone'));
    return this.inner.read(buf, offset);
  }
  write(buf: Buffer, offset: number, fua: boolean) {
    return this.inner.write(buf, offset, fua);
  }
  flush() {
    this.calls.push('flush');
    return this.inner.flush();
  }
  trim(offset: number, length: number) {
    this.calls.push(`trim ${offset}+${length}`);
    return this.inner.trim(offset, length);
  }
  writeZeroes(offset: number, length: number, fua: boolean) {
    this.calls.push(`zeroes ${offset}+${length}`);
    return this.inner.writeZeroes(offset, length, fua);
  }
}

/**
 * The FUSE file the path proxy serves a volume as (fuse-loop), on a real FUSE mount over a real
 * file. The I/O comes from other processes (dd, fallocate, truncate), as a loop device's does:
 * this process's thread pool is the server's.
 */
describe('FuseFileServer', () => {
  let dir: string;
  let server: FuseFileServer | undefined;
  let inner: FileBackend | undefined;
  afterEach(async () => {
    if (await isMountPoint(join(dir, 'volume'))) await unmountAll(join(dir, 'volume'));
    server?.close();
    await inner?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function serve() {
    dir = mkdtempSync(join(tmpdir(), 'storctl-fuse-'));
    const image = join(dir, 'image');
    await writeFile(image, Buffer.alloc(0));
    await exec('truncate', ['-s', String(SIZE), image]);
    inner = await FileBackend.open(image);
    const backend = new RecordingBackend(inner);
    const file = join(dir, 'volume');
    await writeFile(file, '', { mode: 0o600 });
    server = new FuseFileServer({ path: file, backend });
    await server.mount();
    return { image, file, backend };
  }

  const dd = (...args: string[]) => exec('dd', [...args, 'status=none']);

  it('shows the backend as a file of its size; concurrent writes and reads of many sizes land byte for byte', {
    timeout: 60_000,
  }, async () => {
    const { image, file } = await serve();
    expect((await stat(file)).size).toBe(SIZE);
    const source = join(dir, 'source');
    const data = randomBytes(16 * MiB);
    await writeFile(source, data);
    // Each writer its own region and block size (4 KiB … 3 MiB, beyond the 1 MiB largest request),
    // all at once, so requests of several sizes are in flight together.
    const writers = [
      { bs: 4096, count: 256, seek: 0 }, // 1 MiB at 0
      { bs: 65536, count: 32, seek: 32 }, // 2 MiB at 2 MiB
      { bs: MiB, count: 4, seek: 5 }, // 4 MiB at 5 MiB
      { bs: 3 * MiB, count: 2, seek: 4 }, // 6 MiB at 12 MiB
      { bs: 512, count: 100, seek: 40_000 }, // 50 KiB at an odd offset
    ];
    await Promise.all(
      writers.map((w) =>
        dd(`if=${source}`, `of=${file}`, `bs=${w.bs}`, `count=${w.count}`, `seek=${w.seek}`, 'conv=notrunc'),
      ),
    );
    const backing = await readFile(image);
    for (const w of writers) {
      const len = w.bs * w.count;
      expect(backing.subarray(w.seek * w.bs, w.seek * w.bs + len).equals(data.subarray(0, len))).toBe(true);
    }
    // Everything back through the file, in 1 MiB and 3 MiB reads at once, equals the backing file.
    const [a, b] = [join(dir, 'a'), join(dir, 'b')];
    await Promise.all([
      dd(`if=${file}`, `of=${a}`, 'bs=1M', 'count=20'),
      dd(`if=${file}`, `of=${b}`, `bs=${3 * MiB}`, 'count=7'),
    ]);
    expect((await readFile(a)).equals(backing.subarray(0, 20 * MiB))).toBe(true);
    expect((await readFile(b)).equals(backing.subarray(0, 21 * MiB))).toBe(true);
    // The end of the file: a read there ends the file, a write there fails.
    const tail = join(dir, 'tail');
    await dd(`if=${file}`, `of=${tail}`, 'bs=1M', `skip=${SIZE / MiB - 1}`, 'count=4');
    expect((await stat(tail)).size).toBe(MiB);
  });

  it('passes fsync, discard and zeroing to the backend; refuses a new size; a failed read is EIO', {
    timeout: 60_000,
  }, async () => {
    const { file, backend } = await serve();
    await dd('if=/dev/urandom', `of=${file}`, 'bs=1M', 'count=2', 'conv=notrunc,fsync');
    expect(backend.calls).toContain('flush');
    await exec('fallocate', ['--punch-hole', '--keep-size', '-o', String(MiB), '-l', String(MiB), file]);
    await exec('fallocate', ['--zero-range', '--keep-size', '-o', '0', '-l', '65536', file]);
    expect(backend.calls).toEqual(expect.arrayContaining([`trim ${MiB}+${MiB}`, 'zeroes 0+65536']));
    await expect(exec('truncate', ['-s', '1M', file])).rejects.toThrow(/Operation not permitted/);
    expect((await stat(file)).size).toBe(SIZE);

    backend.failReads = true;
    await expect(dd(`if=${file}`, 'of=/dev/null', 'bs=4096', 'count=1', 'skip=100')).rejects.toThrow(
      /Input\/output error/,
    );
  });

  it('ends when the file is unmounted, and the same path can be served again', {
    timeout: 60_000,
  }, async () => {
    const { file } = await serve();
    await unmountAll(file);
    await server!.ended;
    expect(await isMountPoint(file)).toBe(false);
    server = new FuseFileServer({ path: file, backend: new RecordingBackend(inner!) });
    await server.mount();
    expect((await stat(file)).size).toBe(SIZE);
  });
});
