import type { Socket } from 'node:net';
import { type BlockBackend, errnoOf } from './backend.js';
import type { BufferPool } from './buffer-pool.js';
import { ByteQueue } from './byte-queue.js';
import { DIRECT_READ_MIN } from './io-buffer.js';
import {
  Cmd,
  CmdFlag,
  Errno,
  FLAG_C_NO_ZEROES,
  IHAVEOPT,
  MAX_OPTION_SIZE,
  MAX_REQUEST_SIZE,
  REQUEST_HEADER_SIZE,
  REQUEST_MAGIC,
  SIMPLE_REPLY_MAGIC,
  SIMPLE_REPLY_SIZE,
} from './protocol.js';
import { type ExportLookup, handleOption } from './server-handshake.js';
import type { NbdTargetStats } from './stats.js';

type Phase = 'clientFlags' | 'optionHeader' | 'optionData' | 'requestHeader' | 'writePayload' | 'closing';

/** High-water marks: stop reading the socket while this much work is queued. */
const MAX_INFLIGHT = 128;
const MAX_PENDING_OUTPUT = 64 * 1024 * 1024;

/** A read reply being forwarded while its bytes arrive: `out` is header + data, `sent` data bytes are out. */
interface CutThrough {
  out: Buffer;
  handle: Buffer;
  sent: number;
}

/**
 * One client of the NBD server: fixed-newstyle negotiation, then pipelined transmission. Requests run
 * concurrently; each simple reply carries its request's handle, so completion order is free.
 */
export class NbdServerConnection {
  private readonly q = new ByteQueue();
  private phase: Phase = 'clientFlags';
  private noZeroes = false;
  private opt = { code: 0, length: 0 };
  private req = { flags: 0, type: 0, handle: Buffer.alloc(8), offset: 0, length: 0 };
  /** The write payload being received, and how much of it has arrived. */
  private payload: Buffer | null = null;
  private payloadFilled = 0;
  exportName: string | null = null;
  private backend: BlockBackend | null = null;
  private inflight = 0;
  private paused = false;
  private corked = false;
  private drainWaiters: (() => void)[] = [];
  /**
   * The read reply on the wire while its bytes still arrive from a remote backend (the path proxy's
   * target), so forwarding overlaps receiving instead of following it. Replies must not interleave:
   * others completed meanwhile wait in `held`, and only one read streams at a time.
   */
  private streaming: CutThrough | null = null;
  private held: (() => void)[] = [];
  private stats: NbdTargetStats | null = null;

  constructor(
    readonly socket: Socket,
    private readonly exports: ExportLookup,
    private readonly onError: (err: unknown) => void,
    private readonly pool: BufferPool,
    /** The counters of an export, when the server keeps them (the io-engine's /metrics). */
    private readonly statsOf?: (exportName: string) => NbdTargetStats | undefined,
  ) {
    socket.setNoDelay(true);
    // A socket created with `onread` (NbdServer's) hands its bytes to received() and emits no 'data'.
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('error', () => {}); // a vanished client is normal; 'close' cleans up
    socket.on('drain', () => this.tryResume());
  }

  /**
   * Bytes read from the socket. `chunk` may be a view of a read buffer the socket reuses: nothing
   * keeps a view of it past this call (payloads are copied out as they arrive, the rest detached).
   */
  received(chunk: Buffer): void {
    this.q.push(chunk);
    try {
      this.pump();
    } catch (err) {
      this.onError(err);
      this.socket.destroy();
    }
    this.q.detach();
  }

  /**
   * Where the socket's next read may land instead of the connection's read buffer: the rest of the
   * write payload being received, when nothing is queued before it and enough is missing to be worth
   * a read of its own. Saves copying every written byte once more (from the read buffer to the
   * payload): a tenth of an io-engine's CPU under sequential writes.
   */
  payloadReadBuffer(): Buffer | null {
    if (this.phase !== 'writePayload' || this.q.length > 0) return null;
    const missing = this.req.length - this.payloadFilled;
    return missing >= DIRECT_READ_MIN ? this.payload!.subarray(this.payloadFilled, this.req.length) : null;
  }

  /** `n` bytes of the write payload arrived where payloadReadBuffer() said. */
  receivedPayload(n: number): void {
    this.payloadFilled += n;
    if (this.payloadFilled < this.req.length) return;
    this.received(EMPTY);
  }

  /** Serve the initial greeting. */
  greet(handshakeFlags: number): void {
    const b = Buffer.allocUnsafe(18);
    b.writeBigUInt64BE(0x4e42444d41474943n, 0);
    b.writeBigUInt64BE(IHAVEOPT, 8);
    b.writeUInt16BE(handshakeFlags, 16);
    this.socket.write(b);
  }

  private pump(): void {
    for (;;) {
      switch (this.phase) {
        case 'clientFlags': {
          if (this.q.length < 4) return;
          const flags = this.q.take(4).readUInt32BE(0);
          this.noZeroes = (flags & FLAG_C_NO_ZEROES) !== 0;
          this.phase = 'optionHeader';
          break;
        }
        case 'optionHeader': {
          if (this.q.length < 16) return;
          const h = this.q.take(16);
          if (h.readBigUInt64BE(0) !== IHAVEOPT) throw new Error('bad option magic');
          this.opt = { code: h.readUInt32BE(8), length: h.readUInt32BE(12) };
          if (this.opt.length > MAX_OPTION_SIZE)
            throw new Error(`option of ${this.opt.length} bytes is too big`);
          this.phase = 'optionData';
          break;
        }
        case 'optionData': {
          if (this.q.length < this.opt.length) return;
          const data = this.opt.length ? this.q.take(this.opt.length) : Buffer.alloc(0);
          this.phase = 'optionHeader';
          handleOption(
            {
              socket: this.socket,
              exports: this.exports,
              noZeroes: this.noZeroes,
              stopParsing: () => {
                this.phase = 'closing';
              },
              enterTransmission: (name, backend) => this.enterTransmission(name, backend),
            },
            this.opt.code,
            data,
          );
          break;
        }
        case 'requestHeader': {
          if (this.paused || this.q.length < REQUEST_HEADER_SIZE) return;
          const h = this.q.take(REQUEST_HEADER_SIZE);
          if (h.readUInt32BE(0) !== REQUEST_MAGIC) throw new Error('bad request magic');
          const r = this.req;
          r.flags = h.readUInt16BE(4);
          r.type = h.readUInt16BE(6);
          r.handle = Buffer.from(h.subarray(8, 16));
          r.offset = Number(h.readBigUInt64BE(16));
          r.length = h.readUInt32BE(24);
          if (r.type === Cmd.WRITE) {
            if (r.length > MAX_REQUEST_SIZE) throw new Error(`write of ${r.length} bytes is too big`);
            this.payload = this.pool.get(r.length);
            this.payloadFilled = 0;
            this.phase = 'writePayload';
          } else {
            this.dispatch(r.type, r.flags, r.handle, r.offset, r.length, null);
          }
          break;
        }
        case 'writePayload': {
          // Copied out as it arrives (one copy, from the socket's read buffer to the payload).
          const r = this.req;
          const payload = this.payload!;
          const n = Math.min(this.q.length, r.length - this.payloadFilled);
          if (n > 0) this.q.takeInto(payload, this.payloadFilled, n);
          this.payloadFilled += n;
          if (this.payloadFilled < r.length) return;
          this.payload = null;
          this.phase = 'requestHeader';
          this.dispatch(r.type, r.flags, r.handle, r.offset, r.length, payload);
          break;
        }
        case 'closing':
          return;
      }
    }
  }

  private enterTransmission(name: string, backend: BlockBackend): void {
    this.exportName = name;
    this.backend = backend;
    this.stats = this.statsOf?.(name) ?? null;
    this.phase = 'requestHeader';
  }

  private dispatch(
    type: number,
    flags: number,
    handle: Buffer,
    offset: number,
    length: number,
    payload: Buffer | null,
  ): void {
    const backend = this.backend!;
    if (type === Cmd.DISC) {
      this.phase = 'closing';
      void this.drained().then(() => this.socket.end());
      return;
    }
    this.inflight++;
    const stats = this.stats;
    const start = stats ? performance.now() : 0;
    if (!this.paused && (this.inflight >= MAX_INFLIGHT || this.socket.writableLength > MAX_PENDING_OUTPUT)) {
      this.paused = true;
      this.socket.pause();
    }
    const inRange = offset + length <= backend.size;
    let work: Promise<Buffer | null>;
    if (!inRange && type !== Cmd.FLUSH) {
      work = Promise.reject(
        Object.assign(new Error('beyond end of export'), {
          nbdErrno: type === Cmd.READ ? Errno.EINVAL : Errno.ENOSPC,
        }),
      );
    } else if (backend.readOnly && type !== Cmd.READ && type !== Cmd.FLUSH) {
      work = Promise.reject(Object.assign(new Error('read-only export'), { nbdErrno: Errno.EPERM }));
    } else {
      const fua = (flags & CmdFlag.FUA) !== 0;
      switch (type) {
        case Cmd.READ: {
          if (length > MAX_REQUEST_SIZE) {
            work = Promise.reject(Object.assign(new Error('read too big'), { nbdErrno: Errno.EINVAL }));
            break;
          }
          // Reply header and data in one buffer: one allocation, one socket write (or, for a backend
          // that reports progress, writes as the bytes arrive).
          const out = this.pool.get(SIMPLE_REPLY_SIZE + length);
          const cut: CutThrough = { out, handle, sent: -1 };
          work = backend
            .read(out.subarray(SIMPLE_REPLY_SIZE), offset, (filled) => this.forward(cut, filled))
            .then(
              () => out,
              (err) => {
                if (cut.sent >= 0) return this.abortStream(err);
                this.pool.put(out);
                throw err;
              },
            );
          break;
        }
        case Cmd.WRITE:
          work = backend.write(payload!, offset, fua).then(
            () => {
              this.pool.put(payload!);
              return null;
            },
            (err) => {
              this.pool.put(payload!);
              throw err;
            },
          );
          break;
        case Cmd.FLUSH:
          work = backend.flush().then(() => null);
          break;
        case Cmd.TRIM:
          work = backend.trim(offset, length).then(() => null);
          break;
        case Cmd.WRITE_ZEROES:
          work = backend.writeZeroes(offset, length, fua).then(() => null);
          break;
        case Cmd.CACHE:
          work = Promise.resolve(null);
          break;
        default:
          work = Promise.reject(
            Object.assign(new Error(`command ${type} not supported`), { nbdErrno: Errno.EINVAL }),
          );
      }
    }
    work.then(
      (out) => {
        stats?.record(type, length, 0, start);
        this.reply(handle, 0, out);
      },
      (err: unknown) => {
        const e = (err as { nbdErrno?: number }).nbdErrno ?? errnoOf(err);
        stats?.record(type, length, e || 1, start);
        this.reply(handle, e, null);
      },
    );
  }

  /** Start or continue the cut-through reply of a read whose first `filled` bytes are in. */
  private forward(cut: CutThrough, filled: number): void {
    // The last bytes go with the reply itself, which also returns the buffer to the pool.
    if (filled >= cut.out.length - SIMPLE_REPLY_SIZE || this.socket.destroyed) return;
    if (cut.sent < 0) {
      if (this.streaming) return; // another read has the wire: this one replies whole
      this.streaming = cut;
      writeReplyHeader(cut.out, 0, cut.handle);
      this.socket.write(cut.out.subarray(0, SIMPLE_REPLY_SIZE + filled));
    } else if (filled > cut.sent) {
      this.socket.write(cut.out.subarray(SIMPLE_REPLY_SIZE + cut.sent, SIMPLE_REPLY_SIZE + filled));
    } else return;
    cut.sent = filled;
  }

  /**
   * A read failed after its reply started: the header said success and no error can follow it, so
   * the connection is closed — the client sees its I/O fail instead of wrong bytes.
   */
  private abortStream(err: unknown): never {
    this.onError(new Error(`read failed after its reply started: ${(err as Error).message}`));
    this.socket.destroy();
    this.streaming = null;
    for (const r of this.held.splice(0)) r();
    throw err;
  }

  private reply(handle: Buffer, error: number, out: Buffer | null): void {
    const s = this.streaming;
    if (s && s.handle === handle && out) {
      // The streamed read is complete: its remaining bytes, then the replies that waited.
      this.streaming = null;
      this.inflight--;
      if (!this.socket.destroyed)
        this.socket.write(out.subarray(SIMPLE_REPLY_SIZE + s.sent), () => this.pool.put(out));
      for (const r of this.held.splice(0)) r();
      this.afterReply();
      return;
    }
    if (s) {
      this.held.push(() => this.reply(handle, error, out));
      return;
    }
    this.inflight--;
    if (!this.socket.destroyed && this.socket.writable) {
      const b = out && error === 0 ? out : Buffer.allocUnsafe(SIMPLE_REPLY_SIZE);
      writeReplyHeader(b, error, handle);
      if (!this.corked) {
        // Batch every reply completed in this turn of the event loop (all the file reads and
        // writes that finished together) into one socket write: one syscall for many replies.
        this.corked = true;
        this.socket.cork();
        setImmediate(() => {
          this.corked = false;
          this.socket.uncork();
        });
      }
      if (out && error === 0) this.socket.write(b, () => this.pool.put(out));
      else this.socket.write(b.subarray(0, SIMPLE_REPLY_SIZE));
    } else if (out) {
      this.pool.put(out);
    }
    this.afterReply();
  }

  private afterReply(): void {
    this.tryResume();
    if (this.inflight === 0) for (const w of this.drainWaiters.splice(0)) w();
  }

  private tryResume(): void {
    if (!this.paused || this.inflight >= MAX_INFLIGHT / 2 || this.socket.writableLength >= MAX_PENDING_OUTPUT)
      return;
    this.paused = false;
    this.socket.resume();
    setImmediate(() => {
      try {
        this.pump();
      } catch (err) {
        this.onError(err);
        this.socket.destroy();
      }
    });
  }

  /** Resolves when no request is in flight. */
  drained(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((r) => this.drainWaiters.push(r));
  }

  close(): void {
    this.phase = 'closing';
    this.socket.destroy();
  }
}

const EMPTY = Buffer.alloc(0);

function writeReplyHeader(b: Buffer, error: number, handle: Buffer): void {
  b.writeUInt32BE(SIMPLE_REPLY_MAGIC, 0);
  b.writeUInt32BE(error, 4);
  handle.copy(b, 8);
}
