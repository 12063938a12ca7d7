import { chmod, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { FuseFileServer } from '../../lib/fuse/file-server.js';
import { type BlockBackend, BlockIoError, errnoOf, type ReadProgress } from '../../lib/nbd/backend.js';
import { BufferPool } from '../../lib/nbd/buffer-pool.js';
import { NbdClient } from '../../lib/nbd/client.js';
import { Errno, FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES } from '../../lib/nbd/protocol.js';
import { NbdServerConnection } from '../../lib/nbd/server-connection.js';
import { DEFAULT_PATH_TIMEOUT_MS } from './config.js';

/** The export name the local block device asks the proxy for. */
export const PROXY_EXPORT = 'volume';

export interface ProxyServerOptions {
  /** NBD socket the block device connects to (0600). */
  socketPath: string;
  /**
   * Control socket (0600): one JSON request per line, one JSON answer per line —
   * `{"op":"status"}`, `{"op":"repoint","target":"nbd://…"}` (HA: switch to a new target),
   * `{"op":"refresh"}` (reconnect to learn a new size), `{"op":"probe","timeoutMs":500}` (read one
   * block from the target: is the path working?), `{"op":"serve-file","path":"…"}` (serve the volume
   * as a FUSE file mounted at `path`, beside this socket), `{"op":"stop"}`; the answer is
   * `{"ok":true,"status":{…}}` or `{"ok":false,"error":"…"}`.
   */
  controlPath: string;
  /** The current target, nbd://host:port/<export>. */
  target: string;
  /**
   * The size the local device is told. The FUSE attachers ask for more than the volume (the loop
   * device on top is limited to the volume's size and grows with it); reads past the volume's end
   * answer zeroes, writes there fail with ENOSPC.
   */
  advertisedSize?: number;
  /** How long an I/O waits for a path (reconnect or re-point) before it fails with EIO. */
  pathTimeoutMs?: number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export interface PathProbe {
  ok: boolean;
  error?: string;
  ms: number;
}

export interface ProxyStatus {
  target: string;
  connected: boolean;
  size: number;
  advertisedSize: number;
  clients: number;
  lastError?: string;
  /** When the target last refused a write for want of space (ENOSPC: a full pool), ms since the epoch. */
  noSpaceAt?: number;
  repoints: number;
  /** The FUSE file this proxy serves the volume as (serve-file), while the kernel is connected. */
  file?: string;
}

/**
 * The per-volume NBD path proxy: an NBD server on a unix socket that forwards every request to the
 * volume's current target. A lost path is reconnected in the background while requests wait (up to
 * pathTimeoutMs); `repoint` switches to another target without the local device noticing, as NVMe
 * multipath keeps a namespace while its controllers change.
 */
export class PathProxy implements BlockBackend {
  private client: NbdClient | null = null;
  private target: string;
  private readonly waiters: (() => void)[] = [];
  private reconnecting = false;
  private closed = false;
  private lastError?: string;
  private noSpaceAt?: number;
  private repoints = 0;
  private volumeSize = 0;
  private nbdServer?: Server;
  private controlServer?: Server;
  private readonly connections = new Set<NbdServerConnection>();
  private readonly pool = new BufferPool();
  private fileServer?: { path: string; server: FuseFileServer };

  constructor(private readonly opts: ProxyServerOptions) {
    this.target = opts.target;
  }

  get size(): number {
    return Math.max(this.opts.advertisedSize ?? 0, this.volumeSize);
  }

  async start(): Promise<void> {
    this.client = await this.connect(this.target);
    this.volumeSize = this.client.size;
    this.nbdServer = await listenUnix(this.opts.socketPath, (s) => this.acceptNbd(s));
    this.controlServer = await listenUnix(this.opts.controlPath, (s) => this.acceptControl(s));
  }

  private async connect(target: string): Promise<NbdClient> {
    const c = await NbdClient.connect(target, { connectTimeoutMs: 5000, requestTimeoutMs: 30_000 });
    c.onClose((err) => {
      if (this.client !== c) return;
      this.lastError = err.message;
      this.opts.log?.('path lost', { target: this.target, err: err.message });
      void this.reconnect();
    });
    return c;
  }

  /** Reconnect to the current target until it answers (or the proxy is re-pointed or closed). */
  private async reconnect(): Promise<void> {
    if (this.reconnecting) return;
    this.reconnecting = true;
    try {
      for (let delay = 100; !this.closed && (!this.client || this.client.closed); ) {
        const target = this.target;
        try {
          const c = await this.connect(target);
          if (this.target !== target || this.closed) {
            await c.close();
            continue;
          }
          this.adopt(c);
          this.opts.log?.('path restored', { target });
        } catch (err) {
          this.lastError = (err as Error).message;
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 2000);
        }
      }
    } finally {
      this.reconnecting = false;
    }
  }

  /**
   * Make `c` the path. The old connection closes after its requests are answered, or, when it is
   * `abandoned` (the proxy moved away from a target that stopped answering), at once: its requests
   * are then sent again on `c` instead of waiting out their timeout on a target that is gone.
   */
  private adopt(c: NbdClient, abandoned = false): void {
    const old = this.client;
    this.client = c;
    this.volumeSize = c.size;
    this.lastError = undefined;
    for (const w of this.waiters.splice(0)) w();
    if (!old || old.closed) return;
    if (abandoned) old.abort(`re-pointed to ${this.target}`);
    else void old.close();
  }

  /** Switch to another target (HA: a new nexus); the local device and its filesystem stay. */
  async repoint(target: string): Promise<ProxyStatus> {
    const c = await this.connect(target);
    if (c.size < this.volumeSize) {
      await c.close();
      throw new Error(`target ${target} is ${c.size} bytes, smaller than the volume (${this.volumeSize})`);
    }
    const moved = target !== this.target;
    this.target = target;
    this.repoints++;
    this.adopt(c, moved);
    this.opts.log?.('re-pointed', { target });
    return this.status();
  }

  /**
   * Whether the path works now: one 512-byte read from the target within `timeoutMs`. A stalled
   * target keeps its TCP connection, so being connected is not enough (the HA node agent asks this).
   */
  async probe(timeoutMs: number): Promise<PathProbe> {
    const started = Date.now();
    const c = this.client;
    if (!c || c.closed) return { ok: false, error: `not connected: ${this.lastError ?? 'down'}`, ms: 0 };
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        c.read(Buffer.alloc(512), 0),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
      return { ok: true, ms: Date.now() - started };
    } catch (err) {
      return { ok: false, error: (err as Error).message, ms: Date.now() - started };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reconnect to the current target to learn its new size (after a volume resize). */
  async refresh(): Promise<ProxyStatus> {
    const c = await this.connect(this.target);
    this.adopt(c);
    return this.status();
  }

  /**
   * Serve the volume as a regular file mounted at `path` (a loop device on it makes the block
   * device): the kernel's FUSE requests are answered from this process, so a read's bytes go from
   * the target's socket into the FUSE reply. Idempotent while the mount is served.
   */
  async serveFile(path: string): Promise<ProxyStatus> {
    if (dirname(path) !== dirname(this.opts.socketPath))
      throw new Error(`serve-file: ${path} is not beside the proxy's socket`);
    if (this.fileServer?.path === path) return this.status();
    const server = new FuseFileServer({ path, backend: this, log: this.opts.log, pool: this.pool });
    await server.mount();
    const served = { path, server };
    this.fileServer?.server.close();
    this.fileServer = served;
    void server.ended.then(() => {
      if (this.fileServer === served) this.fileServer = undefined;
      this.opts.log?.('FUSE file no longer served', { path });
    });
    return this.status();
  }

  status(): ProxyStatus {
    return {
      target: this.target,
      connected: !!this.client && !this.client.closed,
      size: this.volumeSize,
      advertisedSize: this.size,
      clients: this.connections.size,
      lastError: this.lastError,
      noSpaceAt: this.noSpaceAt,
      repoints: this.repoints,
      file: this.fileServer?.path,
    };
  }

  /** The live client, waiting up to pathTimeoutMs for one. */
  private async path(): Promise<NbdClient> {
    const deadline = Date.now() + (this.opts.pathTimeoutMs ?? DEFAULT_PATH_TIMEOUT_MS);
    for (;;) {
      const c = this.client;
      if (c && !c.closed) return c;
      if (this.closed) throw new BlockIoError('proxy closed', Errno.ESHUTDOWN);
      void this.reconnect();
      const left = deadline - Date.now();
      if (left <= 0) throw new BlockIoError(`no path to ${this.target}: ${this.lastError ?? 'down'}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /**
   * Run `op` on the current path; a request lost with its path is retried on the next one. So is
   * one the target answered NBD_ESHUTDOWN: the target shut itself down without applying it (a
   * nexus fenced by a switchover, or one that could not record a child's fault), which says its
   * path has failed, not the volume; forwarded, it would reach the filesystem as an I/O error.
   */
  private async onPath(op: (c: NbdClient) => Promise<void>): Promise<void> {
    const deadline = Date.now() + (this.opts.pathTimeoutMs ?? DEFAULT_PATH_TIMEOUT_MS);
    for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
      const c = await this.path();
      try {
        return await op(c);
      } catch (err) {
        if (c.closed) continue;
        // Any other remote error (the target answered) is final.
        const errno = errnoOf(err);
        if (errno === Errno.ENOSPC) this.noSpaceAt = Date.now();
        if (errno !== Errno.ESHUTDOWN || Date.now() + pause > deadline) throw err;
        if (this.client === c) {
          this.lastError = (err as Error).message;
          this.opts.log?.('target shut down', { target: this.target, err: this.lastError });
          c.abort(`target shut down: ${this.lastError}`);
        }
        // It may still accept connections for a moment: a pause, not a tight loop.
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }

  /**
   * A read retried on the next path reports its progress from 0 again; what the first path
   * delivered was already final, so the server only forwards what goes beyond it.
   */
  async read(buf: Buffer, offset: number, progress?: ReadProgress): Promise<void> {
    const inVolume = Math.max(0, Math.min(buf.length, this.volumeSize - offset));
    if (inVolume < buf.length) buf.fill(0, inVolume);
    if (inVolume > 0) await this.onPath((c) => c.read(buf.subarray(0, inVolume), offset, progress));
  }

  private checkWrite(offset: number, length: number): void {
    if (offset + length > this.volumeSize)
      throw new BlockIoError(`write past the volume's end (${this.volumeSize} bytes)`, Errno.ENOSPC);
  }

  // async: a write past the end must reject (an NBD error reply), never throw into the connection.
  async write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    this.checkWrite(offset, buf.length);
    return this.onPath((c) => c.write(buf, offset, fua));
  }

  flush(): Promise<void> {
    return this.onPath((c) => c.flush());
  }

  async trim(offset: number, length: number): Promise<void> {
    this.checkWrite(offset, length);
    return this.onPath((c) => c.trim(offset, length));
  }

  async writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    this.checkWrite(offset, length);
    return this.onPath((c) => c.writeZeroes(offset, length, fua));
  }

  private acceptNbd(socket: Socket): void {
    const conn = new NbdServerConnection(
      socket,
      {
        get: (n) => (n === PROXY_EXPORT || n === '' ? this : undefined),
        names: () => [PROXY_EXPORT],
      },
      (err) => this.opts.log?.('NBD client error', { err: String(err) }),
      this.pool,
    );
    this.connections.add(conn);
    socket.on('close', () => this.connections.delete(conn));
    conn.greet(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
  }

  private acceptControl(socket: Socket): void {
    let buf = '';
    socket.on('error', () => {});
    socket.on('data', (d) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        void this.control(line).then((answer) => socket.write(`${JSON.stringify(answer)}\n`));
      }
    });
  }

  private async control(line: string): Promise<Record<string, unknown>> {
    try {
      const req = JSON.parse(line) as { op?: string; target?: string; timeoutMs?: number; path?: string };
      switch (req.op) {
        case 'status':
          return { ok: true, status: this.status() };
        case 'repoint':
          if (typeof req.target !== 'string') throw new Error('repoint needs a target');
          return { ok: true, status: await this.repoint(req.target) };
        case 'probe': {
          const timeoutMs = Math.min(Math.max(Number(req.timeoutMs) || 1000, 10), 60_000);
          return { ok: true, status: this.status(), probe: await this.probe(timeoutMs) };
        }
        case 'refresh':
          return { ok: true, status: await this.refresh() };
        case 'serve-file':
          if (typeof req.path !== 'string') throw new Error('serve-file needs a path');
          return { ok: true, status: await this.serveFile(req.path) };
        case 'stop':
          setImmediate(() => void this.close().then(() => process.exit(0)));
          return { ok: true };
        default:
          throw new Error(`unknown op '${String(req.op).slice(0, 32)}'`);
      }
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) w();
    for (const c of this.connections) c.close();
    this.fileServer?.server.close();
    await Promise.all([closeServer(this.nbdServer), closeServer(this.controlServer)]);
    await this.client?.close();
    await rm(this.opts.socketPath, { force: true });
    await rm(this.opts.controlPath, { force: true });
  }
}

async function listenUnix(path: string, onConnection: (s: Socket) => void): Promise<Server> {
  await rm(path, { force: true });
  const server = createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await chmod(path, 0o600);
  return server;
}

const closeServer = (s?: Server) =>
  new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
