import { createServer, type Server, Socket, type SocketConstructorOpts } from 'node:net';
import type { BlockBackend } from './backend.js';
import { BufferPool } from './buffer-pool.js';
import { ioBuffer } from './io-buffer.js';
import { FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES } from './protocol.js';
import { NbdServerConnection } from './server-connection.js';
import { NbdTargetStats } from './stats.js';

/**
 * A backend that serves each named client through its own view: a replica enforcing a nexus's
 * reservation. A client names itself in the export name, `<export>@<client>` (exportForClient).
 */
export interface ClientViews {
  forClient(client: string): BlockBackend;
}

const CLIENT_SEPARATOR = '@';

/** The export name a client asks for to be served as `client` (see ClientViews). */
export function exportForClient(exportName: string, client: string): string {
  return `${exportName}${CLIENT_SEPARATOR}${client}`;
}

/** The export an export name refers to, without a client part. */
function baseExport(name: string): string {
  const at = name.indexOf(CLIENT_SEPARATOR);
  return at < 0 ? name : name.slice(0, at);
}

export interface NbdServerOptions {
  /** Called with protocol violations and unexpected errors (the connection is dropped). */
  onError?: (err: unknown, remote: string) => void;
}

/**
 * A TCP NBD server (fixed newstyle) serving named exports. Exports come and go at runtime; removing
 * one disconnects its clients.
 */
export class NbdServer {
  private readonly server: Server;
  private readonly exports = new Map<string, BlockBackend>();
  private readonly connections = new Set<NbdServerConnection>();
  private address: { host: string; port: number } | null = null;
  private readonly pool = new BufferPool();
  /** I/O counters per export, read by the io-engine's /metrics (dropped with the export). */
  readonly stats = new Map<string, NbdTargetStats>();

  constructor(private readonly options: NbdServerOptions = {}) {
    this.server = createServer({ pauseOnConnect: true }, (socket) => this.accept(socket));
  }

  private accept(accepted: Socket): void {
    let conn: NbdServerConnection | undefined;
    const socket = withReadBuffer(accepted, {
      into: () => conn?.payloadReadBuffer() ?? null,
      received: (bytes) => conn?.received(bytes),
      receivedInto: (n) => conn?.receivedPayload(n),
    });
    const remote = `${socket.remoteAddress}:${socket.remotePort}`;
    conn = new NbdServerConnection(
      socket,
      { get: (n) => this.lookup(n), names: () => [...this.exports.keys()] },
      (err) => this.options.onError?.(err, remote),
      this.pool,
      (name) => this.stats.get(name),
    );
    this.connections.add(conn);
    socket.on('close', () => this.connections.delete(conn!));
    conn.greet(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
  }

  private lookup(name: string): BlockBackend | undefined {
    const base = baseExport(name);
    const backend = this.exports.get(base);
    if (base === name || !backend) return backend;
    return 'forClient' in backend
      ? (backend as BlockBackend & ClientViews).forClient(name.slice(base.length + 1))
      : undefined;
  }

  async listen(host: string, port: number): Promise<{ host: string; port: number }> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const a = this.server.address();
    if (!a || typeof a === 'string') throw new Error('NBD server has no TCP address');
    this.address = { host, port: a.port };
    return this.address;
  }

  get endpoint(): string {
    if (!this.address) throw new Error('NBD server is not listening');
    return `${this.address.host}:${this.address.port}`;
  }

  /** `nbd://host:port/<name>` of an export. */
  uri(name: string): string {
    return `nbd://${this.endpoint}/${encodeURIComponent(name)}`;
  }

  addExport(name: string, backend: BlockBackend): void {
    if (this.exports.has(name)) throw new Error(`NBD export '${name}' already exists`);
    this.exports.set(name, backend);
    this.stats.set(name, new NbdTargetStats());
  }

  hasExport(name: string): boolean {
    return this.exports.has(name);
  }

  /** Stop offering an export and disconnect its clients; waits for their in-flight requests. */
  async removeExport(name: string): Promise<void> {
    this.exports.delete(name);
    this.stats.delete(name);
    const waits: Promise<void>[] = [];
    for (const c of this.connections) {
      if (c.exportName !== null && baseExport(c.exportName) === name) {
        c.close();
        waits.push(c.drained());
      }
    }
    await Promise.all(waits);
  }

  exportNames(): string[] {
    return [...this.exports.keys()];
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.close();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** Bytes a connection reads at once into its own reused buffer. */
const READ_BUFFER = 256 * 1024;

/** Where a connection's reads land. */
interface ReadTarget {
  /** A buffer the next read should fill instead of the connection's own (null: its own). */
  into(): Buffer | null;
  /** Bytes read into the connection's own buffer (a view valid during the call only). */
  received(bytes: Buffer): void;
  /** `n` bytes read into the buffer into() gave. */
  receivedInto(n: number): void;
}

/**
 * The accepted connection, re-wrapped to read into buffers of its choosing (`onread`), which
 * net.Server has no option for: one buffer of its own, or where the reader says (a write payload).
 * A plain server socket allocates a new 64 KiB buffer for every read: receiving writes cost twice
 * the CPU (allocation and the garbage collector) and the payload is copied once anyway. The server
 * was told to accept paused, so no byte was read before the re-wrap. The server still counts
 * `accepted` as its connection: it is released (without closing the handle it no longer owns) when
 * the new socket closes.
 */
function withReadBuffer(accepted: Socket, target: ReadTarget): Socket {
  const internal = accepted as unknown as { _handle: unknown };
  const buffer = ioBuffer(READ_BUFFER);
  // `handle` is the documented way net.Server itself builds its sockets, though not in the typings.
  const socket = new Socket({
    handle: internal._handle,
    onread: {
      buffer: () => target.into() ?? buffer,
      callback: (n: number, buf: Uint8Array) => {
        if (buf === buffer) target.received(buffer.subarray(0, n));
        else target.receivedInto(n);
      },
    },
  } as SocketConstructorOpts);
  socket.on('close', () => {
    internal._handle = null;
    accepted.destroy();
  });
  return socket;
}
