import { connect, type Socket } from 'node:net';
import { errnoName } from '../errno.js';
import { type BlockBackend, BlockIoError, type ReadProgress } from './backend.js';
import { ByteQueue } from './byte-queue.js';
import { DIRECT_READ_MIN, ioBuffer } from './io-buffer.js';
import {
  Cmd,
  CmdFlag,
  DEFAULT_NBD_PORT,
  Errno,
  FLAG_C_FIXED_NEWSTYLE,
  FLAG_C_NO_ZEROES,
  FLAG_FIXED_NEWSTYLE,
  FLAG_NO_ZEROES,
  IHAVEOPT,
  Info,
  MAX_REQUEST_SIZE,
  NBDMAGIC,
  OPT_REPLY_MAGIC,
  Opt,
  REQUEST_HEADER_SIZE,
  REQUEST_MAGIC,
  Rep,
  SIMPLE_REPLY_MAGIC,
  SIMPLE_REPLY_SIZE,
  TFLAG_READ_ONLY,
} from './protocol.js';

/** The buffer headers and small payloads are read into (one per connection). */
const SCRATCH_SIZE = 256 * 1024;

export interface NbdTarget {
  host: string;
  port: number;
  exportName: string;
}

/** Parse `nbd://host[:port]/<export>[?query]`. */
export function parseNbdUri(uri: string): NbdTarget {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    throw new Error(`'${uri}' is not a URI (expected nbd://host:port/<export>)`);
  }
  if (u.protocol !== 'nbd:') throw new Error(`'${uri}' is not an nbd:// URI`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!host) throw new Error(`'${uri}' has no host`);
  return {
    host,
    port: u.port ? Number(u.port) : DEFAULT_NBD_PORT,
    exportName: decodeURIComponent(u.pathname.replace(/^\//, '')),
  };
}

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
  readBuf: Buffer | null;
  /** Told how much of readBuf has arrived, as it does. */
  progress?: ReadProgress;
  startedAt: number;
}

export interface NbdClientOptions {
  /** A request unanswered this long fails the whole connection (default 30 s). */
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * With requests waiting, this long without a byte from the server, a keep-alive probe included,
   * fails the connection (0, the default: only requestTimeoutMs applies). See keepAlive().
   */
  keepAliveMs?: number;
}

/**
 * An NBD client (fixed newstyle, OPT_GO, simple replies) usable as a BlockBackend: a nexus uses it
 * for replicas on other nodes. Requests are pipelined; any connection failure fails every pending
 * and later request, which is what lets the nexus fault the child.
 */
export class NbdClient implements BlockBackend {
  size = 0;
  readOnly = false;
  private readonly q = new ByteQueue();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private waiter: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | null = null;
  private reading: { p: Pending; remaining: number; filled: number } | null = null;
  private closedError: BlockIoError | null = null;
  private corked = false;
  private timer: NodeJS.Timeout | null = null;
  private closeListeners: ((err: Error) => void)[] = [];
  /**
   * When the server was last heard (Date.now()): a request going out on an idle connection sets it,
   * and so does each keep-alive check that finds reads since the last one. Socket reads only count
   * (`reads`), so no clock is read per read.
   */
  private heardAt = Date.now();
  private reads = 0;
  private readsSeen = 0;
  private probing = false;

  private constructor(
    private readonly socket: Socket,
    readonly target: NbdTarget,
    private readonly scratch: Buffer,
  ) {}

  static async connect(target: NbdTarget | string, options: NbdClientOptions = {}): Promise<NbdClient> {
    const t = typeof target === 'string' ? parseNbdUri(target) : target;
    // The client reads into buffers it chooses (see nextReadBuffer): a read reply's payload goes
    // straight from the socket into the caller's buffer, with no chunk allocated per read.
    let client: NbdClient | undefined;
    const scratch = ioBuffer(SCRATCH_SIZE);
    const socket = connect({
      host: t.host,
      port: t.port,
      noDelay: true,
      onread: {
        buffer: () => client?.nextReadBuffer() ?? scratch,
        callback: (n: number, buf: Uint8Array) => {
          client!.onRead(n, buf);
          return true;
        },
      },
    });
    client = new NbdClient(socket, t, scratch);
    const where = `nbd://${t.host}:${t.port}/${t.exportName}`;
    const connectTimeout = setTimeout(
      () => socket.destroy(new Error(`connect timeout after ${options.connectTimeoutMs ?? 10_000} ms`)),
      options.connectTimeoutMs ?? 10_000,
    );
    socket.on('error', (err) => client.fail(new BlockIoError(`${where}: ${err.message}`)));
    socket.on('close', () => client.fail(new BlockIoError(`${where}: connection closed`)));
    try {
      await client.handshake();
    } catch (err) {
      socket.destroy();
      throw new Error(`cannot open ${where}: ${(err as Error).message}`);
    } finally {
      clearTimeout(connectTimeout);
    }
    const timeoutMs = options.requestTimeoutMs ?? 30_000;
    const keepAliveMs = options.keepAliveMs ?? 0;
    client.timer = setInterval(
      () => {
        const now = Date.now();
        for (const p of client.pending.values()) {
          if (now - p.startedAt > timeoutMs) {
            socket.destroy(new Error(`request unanswered for ${timeoutMs} ms`));
            return;
          }
        }
        if (keepAliveMs > 0 && client.pending.size > 0) client.keepAlive(now, keepAliveMs);
      },
      // Often enough that a probe goes out (at half the keep-alive) well before the end of it.
      Math.min(1000, timeoutMs, keepAliveMs > 0 ? keepAliveMs / 4 : Number.POSITIVE_INFINITY),
    );
    client.timer.unref();
    return client;
  }

  /** Called once when the connection is lost (not after close()). */
  onClose(listener: (err: Error) => void): void {
    this.closeListeners.push(listener);
  }

  private readExact(n: number): Promise<Buffer> {
    if (this.closedError) return Promise.reject(this.closedError);
    if (this.q.length >= n) return Promise.resolve(Buffer.from(this.q.take(n)));
    return new Promise((resolve, reject) => {
      this.waiter = { n, resolve, reject };
    });
  }

  private async handshake(): Promise<void> {
    const greet = await this.readExact(18);
    if (greet.readBigUInt64BE(0) !== NBDMAGIC || greet.readBigUInt64BE(8) !== IHAVEOPT)
      throw new Error('not a newstyle NBD server');
    const hflags = greet.readUInt16BE(16);
    if (!(hflags & FLAG_FIXED_NEWSTYLE)) throw new Error('server does not speak fixed newstyle');
    const cflags = FLAG_C_FIXED_NEWSTYLE | (hflags & FLAG_NO_ZEROES ? FLAG_C_NO_ZEROES : 0);
    const name = Buffer.from(this.target.exportName, 'utf8');
    const b = Buffer.alloc(4 + 16 + 4 + name.length + 2);
    b.writeUInt32BE(cflags, 0);
    b.writeBigUInt64BE(IHAVEOPT, 4);
    b.writeUInt32BE(Opt.GO, 12);
    b.writeUInt32BE(4 + name.length + 2, 16);
    b.writeUInt32BE(name.length, 20);
    name.copy(b, 24);
    b.writeUInt16BE(0, 24 + name.length);
    this.socket.write(b);
    for (;;) {
      const h = await this.readExact(20);
      if (h.readBigUInt64BE(0) !== OPT_REPLY_MAGIC) throw new Error('bad option reply magic');
      const type = h.readUInt32BE(12);
      const len = h.readUInt32BE(16);
      const data = len ? await this.readExact(len) : Buffer.alloc(0);
      if (type === Rep.ACK) break;
      if (type === Rep.INFO) {
        if (data.readUInt16BE(0) === Info.EXPORT) {
          this.size = Number(data.readBigUInt64BE(2));
          this.readOnly = (data.readUInt16BE(10) & TFLAG_READ_ONLY) !== 0;
        }
        continue;
      }
      if (type & 0x80000000) {
        const why = data.toString('utf8') || `error reply 0x${type.toString(16)}`;
        const name = this.target.exportName;
        throw new Error(
          type === Rep.ERR_UNKNOWN && !why.includes(`'${name}'`) ? `export '${name}' not found: ${why}` : why,
        );
      }
    }
  }

  /**
   * Where the socket's next read lands: the rest of the read reply being received, when nothing is
   * queued before it and enough is missing to be worth a read of its own; else the scratch buffer.
   */
  private nextReadBuffer(): Buffer {
    const r = this.reading;
    if (r && this.q.length === 0 && r.remaining >= DIRECT_READ_MIN)
      return r.p.readBuf!.subarray(r.filled, r.filled + r.remaining);
    return this.scratch;
  }

  /**
   * Requests wait and the server has been silent for half of `ms`: a zero-length read, which a live
   * server answers at once without touching its disk, tells a slow disk (answered) from a connection
   * that is gone (silence: a cut network drops packets, no reset comes). Silence for all of `ms`
   * ends the connection, as NVMe's keep-alive timeout ends a controller's, instead of every request
   * waiting out requestTimeoutMs.
   */
  private keepAlive(now: number, ms: number): void {
    if (this.reads !== this.readsSeen) {
      this.readsSeen = this.reads;
      this.heardAt = now;
    }
    const silent = now - this.heardAt;
    if (silent >= ms) {
      this.socket.destroy(new Error(`no answer from the server for ${ms} ms, a keep-alive probe included`));
      return;
    }
    if (silent < ms / 2 || this.probing) return;
    this.probing = true;
    this.request(Cmd.READ, 0, 0, 0, null, null)
      .catch(() => {}) // any answer, an error too, shows the server alive; a lost connection fails it
      .finally(() => {
        this.probing = false;
      });
  }

  private onRead(n: number, buf: Uint8Array): void {
    this.reads++;
    if (buf !== this.scratch) {
      // The bytes are already where they belong: nextReadBuffer handed out the rest of `reading`.
      const r = this.reading;
      if (!r) return; // failed meanwhile: nothing waits for them
      r.filled += n;
      r.remaining -= n;
      r.p.progress?.(r.filled);
      if (r.remaining > 0) return;
      this.reading = null;
      r.p.resolve();
      return;
    }
    this.q.push(this.scratch.subarray(0, n));
    if (this.waiter) {
      if (this.q.length >= this.waiter.n) {
        const w = this.waiter;
        this.waiter = null;
        w.resolve(Buffer.from(this.q.take(w.n)));
      }
    } else {
      try {
        this.parseReplies();
      } catch (err) {
        this.socket.destroy(err as Error);
      }
    }
    // What is left is a view of the scratch buffer, which the next read overwrites.
    this.q.detach();
  }

  private parseReplies(): void {
    for (;;) {
      const r = this.reading;
      if (r) {
        const n = Math.min(r.remaining, this.q.length);
        if (n === 0) return;
        this.q.takeInto(r.p.readBuf!, r.filled, n);
        r.filled += n;
        r.remaining -= n;
        r.p.progress?.(r.filled);
        if (r.remaining > 0) return;
        this.reading = null;
        r.p.resolve();
        continue;
      }
      if (this.q.length < SIMPLE_REPLY_SIZE) return;
      const h = this.q.take(SIMPLE_REPLY_SIZE);
      if (h.readUInt32BE(0) !== SIMPLE_REPLY_MAGIC) throw new Error('bad reply magic');
      const error = h.readUInt32BE(4);
      const id = h.readUInt32BE(12);
      const p = this.pending.get(id);
      if (!p) throw new Error(`reply for unknown handle ${id}`);
      this.pending.delete(id);
      if (error !== 0) {
        p.reject(
          new BlockIoError(
            `nbd://${this.target.host}:${this.target.port}/${this.target.exportName}: remote error ${errnoName(error)}`,
            error,
          ),
        );
      } else if (p.readBuf && p.readBuf.length > 0) {
        this.reading = { p, remaining: p.readBuf.length, filled: 0 };
      } else {
        p.resolve();
      }
    }
  }

  private fail(err: BlockIoError): void {
    if (this.closedError) return;
    this.closedError = err;
    if (this.timer) clearInterval(this.timer);
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.reject(err);
    }
    // The reply being received has left `pending` already: it fails too, or it would wait forever.
    this.reading?.p.reject(err);
    this.reading = null;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const l of this.closeListeners.splice(0)) l(err);
  }

  private request(
    type: number,
    flags: number,
    offset: number,
    length: number,
    payload: Buffer | null,
    readBuf: Buffer | null,
    progress?: ReadProgress,
  ): Promise<void> {
    if (this.closedError) return Promise.reject(this.closedError);
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    const h = Buffer.allocUnsafe(REQUEST_HEADER_SIZE);
    h.writeUInt32BE(REQUEST_MAGIC, 0);
    h.writeUInt16BE(flags, 4);
    h.writeUInt16BE(type, 6);
    h.writeUInt32BE(0, 8);
    h.writeUInt32BE(id, 12);
    h.writeBigUInt64BE(BigInt(offset), 16);
    h.writeUInt32BE(length, 24);
    const now = Date.now();
    // The server's silence counts from the first request it owes an answer to.
    if (this.pending.size === 0 && !this.reading) this.heardAt = now;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, readBuf, progress, startedAt: now });
      if (!this.corked) {
        this.corked = true;
        this.socket.cork();
        process.nextTick(() => {
          this.corked = false;
          this.socket.uncork();
        });
      }
      this.socket.write(h);
      if (payload) this.socket.write(payload);
    });
  }

  async read(buf: Buffer, offset: number, progress?: ReadProgress): Promise<void> {
    for (let done = 0; done < buf.length; done += MAX_REQUEST_SIZE) {
      const n = Math.min(MAX_REQUEST_SIZE, buf.length - done);
      const base = done;
      const part = progress && ((filled: number) => progress(base + filled));
      await this.request(Cmd.READ, 0, offset + done, n, null, buf.subarray(done, done + n), part);
    }
  }

  async write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    for (let done = 0; done < buf.length; done += MAX_REQUEST_SIZE) {
      const n = Math.min(MAX_REQUEST_SIZE, buf.length - done);
      await this.request(
        Cmd.WRITE,
        fua ? CmdFlag.FUA : 0,
        offset + done,
        n,
        buf.subarray(done, done + n),
        null,
      );
    }
  }

  flush(): Promise<void> {
    return this.request(Cmd.FLUSH, 0, 0, 0, null, null);
  }

  trim(offset: number, length: number): Promise<void> {
    return this.request(Cmd.TRIM, 0, offset, length, null, null);
  }

  async writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    const step = 0x80000000; // lengths are u32
    for (let done = 0; done < length; done += step) {
      const n = Math.min(step, length - done);
      await this.request(Cmd.WRITE_ZEROES, fua ? CmdFlag.FUA : 0, offset + done, n, null, null);
    }
  }

  get closed(): boolean {
    return this.closedError !== null;
  }

  get connectionLost(): boolean {
    return this.closed;
  }

  /**
   * Drop the connection now: requests in flight fail as on a lost connection, so a caller can send
   * them again elsewhere (a path proxy re-pointed away from a stalled target).
   */
  abort(reason: string): void {
    if (this.closedError) return;
    this.closeListeners = [];
    this.fail(new BlockIoError(reason, Errno.ESHUTDOWN));
    this.socket.destroy();
  }

  /** Send DISC after in-flight requests and close. */
  async close(): Promise<void> {
    if (this.closedError) return;
    this.closeListeners = [];
    const d = Buffer.alloc(REQUEST_HEADER_SIZE);
    d.writeUInt32BE(REQUEST_MAGIC, 0);
    d.writeUInt16BE(Cmd.DISC, 6);
    // Every request still to be answered, the one whose reply is arriving included.
    const unanswered = [...(this.reading ? [this.reading.p] : []), ...this.pending.values()];
    await Promise.allSettled(
      unanswered.map(
        (p) =>
          new Promise<void>((r) => {
            const { resolve, reject } = p;
            p.resolve = () => {
              resolve();
              r();
            };
            p.reject = (e) => {
              reject(e);
              r();
            };
          }),
      ),
    );
    if (!this.socket.destroyed) this.socket.end(d);
    this.fail(new BlockIoError('connection closed by client', Errno.ESHUTDOWN));
  }
}
