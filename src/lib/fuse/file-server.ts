import { spawn } from 'node:child_process';
import { closeSync, constants, openSync, read, writeSync, writevSync } from 'node:fs';
import { Errno } from '../errno.js';
import { type BlockBackend, errnoOf } from '../nbd/backend.js';
import { BufferPool } from '../nbd/buffer-pool.js';
import {
  attrOut,
  FALLOC_FL_KEEP_SIZE,
  FALLOC_FL_PUNCH_HOLE,
  FALLOC_FL_ZERO_RANGE,
  FATTR_SIZE,
  FOPEN_DIRECT_IO,
  FUSE_KERNEL_VERSION,
  FUSE_MIN_MINOR,
  FUSE_OUR_MINOR,
  IN_HEADER,
  InitFlag,
  initOut,
  NO_REPLY,
  Opcode,
  OUT_HEADER,
  openOut,
  parseFallocate,
  parseInHeader,
  parseInitIn,
  parseIo,
  parseSetattr,
  statfsOut,
  WRITE_IN,
  writeOut,
  writeOutHeader,
} from './protocol.js';

/** Largest READ/WRITE the kernel sends (max_pages × 4 KiB): a loop device's 1 MiB requests stay whole. */
const MAX_IO = 1 << 20;
/** A request buffer holds the largest WRITE with its headers. */
const REQUEST_BUFFER = MAX_IO + 4096;
/**
 * Requests read from /dev/fuse at once. Each read blocks a libuv pool thread until the kernel has
 * a request (Node cannot poll a character device), so this stays below the pool's 4 threads.
 */
const READERS = 2;

export interface FuseFileServerOptions {
  /** An existing regular file: the mount point, which then shows the backend's bytes. */
  path: string;
  backend: BlockBackend;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** Where request and reply buffers come from: the owner's, so one process keeps one pool. */
  pool?: BufferPool;
}

/**
 * Serves a block backend as one regular file through the kernel's FUSE protocol, from this
 * process: the file is the mount point itself (rootmode S_IFREG), so there is no directory to
 * serve. Replaces nbdfuse in front of the path proxy: the bytes of a read go from the proxy's
 * NBD client into the FUSE reply, with no second process and no socket hop between them.
 * Mounted with mount(8) handed the open /dev/fuse as fd 3 (the kernel's `fd=` option), as
 * fusermount does for libfuse; unmounting is `umount PATH` by whoever stops using it.
 */
export class FuseFileServer {
  private fd = -1;
  private readers = 0;
  private stopped = false;
  private readonly pool: BufferPool;
  private readonly mtimeSec = Math.floor(Date.now() / 1000);
  /** The file's owner, and the mount's: this process's user. */
  private readonly uid = process.getuid?.() ?? 0;
  private readonly gid = process.getgid?.() ?? 0;
  private endResolve!: () => void;
  /** Resolves once the kernel has ended the connection (unmounted or aborted) or close() ran. */
  readonly ended = new Promise<void>((r) => {
    this.endResolve = r;
  });

  constructor(private readonly opts: FuseFileServerOptions) {
    this.pool = opts.pool ?? new BufferPool();
  }

  async mount(): Promise<void> {
    this.fd = openSync('/dev/fuse', constants.O_RDWR);
    try {
      // 0100000: S_IFREG. default_permissions: the kernel checks the file's mode (0600, root).
      const options = `fd=3,rootmode=100000,user_id=${this.uid},group_id=${this.gid},default_permissions`;
      await runMount(['-i', '-t', 'fuse.storctl', '-o', options, 'storctl', this.opts.path], this.fd);
    } catch (err) {
      closeSync(this.fd);
      this.fd = -1;
      throw err;
    }
    for (let i = 0; i < READERS; i++) this.readNext();
  }

  /** Stop serving; the mount, if still there, answers ENOTCONN until it is unmounted. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    // A pool thread may still be blocked reading the fd: it returns once the connection ends.
    if (this.readers === 0) this.release();
    this.endResolve();
  }

  private release(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  private readNext(): void {
    if (this.stopped) return;
    this.readers++;
    const buf = this.pool.get(REQUEST_BUFFER);
    read(this.fd, buf, 0, buf.length, null, (err, n) => {
      this.readers--;
      if (err) {
        this.pool.put(buf);
        const code = (err as NodeJS.ErrnoException).code;
        // Interrupted before we read it, or a transient condition: read the next one.
        if (code === 'ENOENT' || code === 'EINTR' || code === 'EAGAIN') return this.readNext();
        // ENODEV: unmounted, or the connection was aborted.
        if (code !== 'ENODEV') this.opts.log?.('FUSE device read failed', { err: err.message });
        this.close();
        if (this.readers === 0) this.release();
        return;
      }
      if (this.stopped) {
        // Read after close(): answered, not dropped (a dropped request would hang its caller).
        const h = parseInHeader(buf);
        if (!NO_REPLY.has(h.opcode)) this.replyError(h.unique, Errno.EIO);
        this.pool.put(buf);
        if (this.readers === 0) this.release();
        return;
      }
      this.readNext();
      this.handle(buf, n);
    });
  }

  private handle(buf: Buffer, n: number): void {
    const h = parseInHeader(buf);
    const body = buf.subarray(IN_HEADER, Math.min(n, h.len));
    if (NO_REPLY.has(h.opcode)) {
      this.pool.put(buf);
      return;
    }
    if (h.opcode === Opcode.READ) {
      const { offset, size } = parseIo(body);
      this.pool.put(buf);
      void this.read(h.unique, offset, size);
      return;
    }
    // A WRITE's data stays in `buf` until the backend has it.
    this.answer(h.opcode, body)
      .then(
        (out) => (typeof out === 'number' ? this.replyError(h.unique, out) : this.reply(h.unique, out)),
        (err) => this.replyError(h.unique, err),
      )
      .finally(() => this.pool.put(buf));
  }

  /** The body of the answer to a request other than READ, or an errno. */
  private async answer(opcode: number, body: Buffer): Promise<Buffer | number | undefined> {
    const { backend } = this.opts;
    switch (opcode) {
      case Opcode.INIT:
        return this.init(body);
      case Opcode.WRITE: {
        const { offset, size } = parseIo(body);
        const data = body.subarray(WRITE_IN, WRITE_IN + size);
        if (data.length !== size) return Errno.EINVAL;
        await backend.write(data, offset, false);
        return writeOut(size);
      }
      case Opcode.FSYNC:
        await backend.flush();
        return undefined;
      case Opcode.FALLOCATE: {
        // What a loop device sends: discard as a punched hole, write-zeroes as a zeroed range.
        const f = parseFallocate(body);
        if (f.mode === (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)) await backend.trim(f.offset, f.length);
        else if ((f.mode & ~FALLOC_FL_KEEP_SIZE) === FALLOC_FL_ZERO_RANGE)
          await backend.writeZeroes(f.offset, f.length, false);
        else return Errno.ENOTSUP;
        return undefined;
      }
      case Opcode.GETATTR:
        return this.attr();
      case Opcode.SETATTR: {
        // The file is the backend: it has the size it has (a loop device never truncates it).
        const s = parseSetattr(body);
        if (s.valid & FATTR_SIZE && s.size !== backend.size) return Errno.EPERM;
        return this.attr();
      }
      case Opcode.OPEN:
        return openOut(0, FOPEN_DIRECT_IO);
      case Opcode.STATFS:
        return statfsOut(backend.size);
      case Opcode.FLUSH:
      case Opcode.RELEASE:
      case Opcode.DESTROY:
        return undefined;
      case Opcode.LOOKUP:
        return Errno.ENOENT;
      default:
        return Errno.ENOSYS;
    }
  }

  private init(body: Buffer): Buffer | number {
    const k = parseInitIn(body);
    if (k.major !== FUSE_KERNEL_VERSION || k.minor < FUSE_MIN_MINOR) {
      this.opts.log?.('FUSE protocol too old', {
        major: k.major,
        minor: k.minor,
        need: `7.${FUSE_MIN_MINOR}`,
      });
      return Errno.EPROTO;
    }
    const wanted = InitFlag.ASYNC_READ | InitFlag.BIG_WRITES | InitFlag.ASYNC_DIO | InitFlag.MAX_PAGES;
    return initOut({
      minor: Math.min(k.minor, FUSE_OUR_MINOR),
      maxReadahead: k.maxReadahead,
      flags: k.flags & wanted,
      maxBackground: 64,
      maxWrite: MAX_IO,
      maxPages: MAX_IO / 4096,
    });
  }

  private attr(): Buffer {
    return attrOut({
      ino: 1,
      size: this.opts.backend.size,
      mode: 0o100600,
      uid: this.uid,
      gid: this.gid,
      mtimeSec: this.mtimeSec,
    });
  }

  private async read(unique: bigint, offset: number, size: number): Promise<void> {
    const out = this.pool.get(OUT_HEADER + size);
    try {
      const end = Math.min(offset + size, this.opts.backend.size);
      const length = Math.max(0, end - offset);
      if (length > 0) await this.opts.backend.read(out.subarray(OUT_HEADER, OUT_HEADER + length), offset);
      writeOutHeader(out, OUT_HEADER + length, 0, unique);
      this.write(out.subarray(0, OUT_HEADER + length));
    } catch (err) {
      this.replyError(unique, err);
    } finally {
      this.pool.put(out);
    }
  }

  /** A success with `body`, or, given `errno`, a failure (the header alone). */
  private reply(unique: bigint, body?: Buffer, errno = 0): void {
    const header = Buffer.allocUnsafe(OUT_HEADER);
    writeOutHeader(header, OUT_HEADER + (body?.length ?? 0), -errno, unique);
    this.write(body ? [header, body] : header);
  }

  /** `err`: an errno, or an error whose errno the backend says (errnoOf). */
  private replyError(unique: bigint, err: unknown): void {
    this.reply(unique, undefined, typeof err === 'number' ? err : errnoOf(err));
  }

  /**
   * Replies are written synchronously: a write to /dev/fuse never waits (it completes the request
   * and copies into the requester's pages), and the pool threads are kept for the reads.
   */
  private write(data: Buffer | Buffer[]): void {
    if (this.fd < 0) return;
    try {
      if (Array.isArray(data)) writevSync(this.fd, data);
      else writeSync(this.fd, data);
    } catch (err) {
      // ENOENT: the request was interrupted meanwhile; ENODEV: the connection is gone.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENODEV')
        this.opts.log?.('FUSE reply failed', { err: (err as Error).message });
    }
  }
}

/** mount(8) with /dev/fuse as its fd 3; -i: no /sbin/mount.fuse helper, the kernel mounts it. */
function runMount(args: string[], fuseFd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('mount', args, { stdio: ['ignore', 'ignore', 'pipe', fuseFd] });
    let stderr = '';
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    child.once('error', (err) => reject(new Error(`cannot run mount: ${err.message}`)));
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`mount of the FUSE file failed: ${stderr.trim() || `exit ${code}`}`)),
    );
  });
}
