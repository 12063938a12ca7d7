import dbus from 'dbus-next';

const { Message, Variant } = dbus;
type Bus = dbus.MessageBus;

const SYSTEMD = 'org.freedesktop.systemd1';
const MANAGER_PATH = '/org/freedesktop/systemd1';
const MANAGER = 'org.freedesktop.systemd1.Manager';
const PROPS = 'org.freedesktop.DBus.Properties';
export const DEFAULT_SYSTEM_BUS = 'unix:path=/run/dbus/system_bus_socket';

/** A D-Bus error reply from systemd (`type` is the error name, e.g. org.freedesktop.systemd1.NoSuchUnit). */
export class SystemdCallError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = 'SystemdCallError';
  }
}

/** The bus connection dropped (or never came up); the caller may reconnect. */
export class BusClosedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BusClosedError';
  }
}

export type UnitProperty = [string, InstanceType<typeof Variant>];

export interface UnitStatus {
  name: string;
  description: string;
  loadState: string;
  activeState: string;
  subState: string;
}

export interface ExecCommand {
  path: string;
  argv: string[];
}

interface Connection {
  bus: Bus;
  closed: Promise<never>;
  isClosed: () => boolean;
}

/**
 * A small systemd Manager client over one D-Bus connection. It subscribes to JobRemoved and buffers
 * results by job path, because the signal can arrive before the reply that carries the job path.
 * When the connection drops, the next call reconnects (and re-subscribes) and is retried once.
 */
export class SystemdClient {
  private conn: Connection | undefined;
  private connecting: Promise<Connection> | undefined;
  private readonly jobResults = new Map<string, string>();
  private readonly jobWaiters = new Map<string, (result: string) => void>();

  constructor(
    readonly address: string = DEFAULT_SYSTEM_BUS,
    private readonly callTimeoutMs = 15_000,
  ) {}

  private async connect(): Promise<Connection> {
    if (this.conn && !this.conn.isClosed()) return this.conn;
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<Connection> {
    const bus = dbus.sessionBus({ busAddress: this.address });
    let closed = false;
    let rejectClosed!: (err: Error) => void;
    const closedPromise = new Promise<never>((_, reject) => {
      rejectClosed = reject;
    });
    closedPromise.catch(() => {});
    const markClosed = (why: string) => {
      if (closed) return;
      closed = true;
      rejectClosed(new BusClosedError(`D-Bus connection to ${this.address} closed: ${why}`));
    };
    bus.on('error', (err: Error) => markClosed(err?.message ?? String(err)));
    // dbus-next leaves calls pending forever on a dead stream; watch the socket itself.
    const stream = (bus as unknown as { _connection?: { stream?: NodeJS.EventEmitter } })._connection?.stream;
    stream?.on('close', () => markClosed('socket closed'));
    stream?.on('end', () => markClosed('socket ended'));
    bus.on('message', (msg: InstanceType<typeof Message>) => {
      if (msg.type === dbus.MessageType.SIGNAL && msg.interface === MANAGER && msg.member === 'JobRemoved') {
        const [, job, , result] = msg.body as [number, string, string, string];
        this.jobDone(job, result);
      }
    });
    const conn: Connection = { bus, closed: closedPromise, isClosed: () => closed };
    try {
      await this.raw(conn, {
        path: '/org/freedesktop/DBus',
        destination: 'org.freedesktop.DBus',
        interface: 'org.freedesktop.DBus',
        member: 'AddMatch',
        signature: 's',
        body: [`type='signal',sender='${SYSTEMD}',interface='${MANAGER}',member='JobRemoved'`],
      });
      await this.raw(conn, {
        path: MANAGER_PATH,
        destination: SYSTEMD,
        interface: MANAGER,
        member: 'Subscribe',
      });
    } catch (err) {
      markClosed('setup failed');
      bus.disconnect();
      throw err;
    }
    this.conn = conn;
    return conn;
  }

  private jobDone(job: string, result: string): void {
    const waiter = this.jobWaiters.get(job);
    if (waiter) {
      this.jobWaiters.delete(job);
      waiter(result);
      return;
    }
    this.jobResults.set(job, result);
    // Results nobody waits for (other clients' jobs) must not pile up.
    if (this.jobResults.size > 2000) this.jobResults.delete(this.jobResults.keys().next().value as string);
  }

  private async raw(
    conn: Connection,
    m: {
      path: string;
      destination: string;
      interface: string;
      member: string;
      signature?: string;
      body?: unknown[];
    },
  ): Promise<unknown[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new BusClosedError(`D-Bus call ${m.member} timed out after ${this.callTimeoutMs} ms`)),
        this.callTimeoutMs,
      );
    });
    try {
      const reply = await Promise.race([conn.bus.call(new Message(m)), conn.closed, timeout]);
      return (reply?.body as unknown[]) ?? [];
    } catch (err) {
      const e = err as { type?: string; text?: string; message?: string };
      if (e.type) throw new SystemdCallError(e.type, `${m.member}: ${e.text || e.type}`);
      // dbus-next throws plain Errors for a dead stream ("Cannot send message, stream is closed").
      if (
        !(err instanceof BusClosedError) &&
        /stream is closed|closed stream|EPIPE|ECONNRESET|ECONNREFUSED|ENOENT|socket/i.test(e.message ?? '')
      ) {
        conn.bus.disconnect();
        if (this.conn === conn) this.conn = undefined;
        throw new BusClosedError(`D-Bus connection to ${this.address} lost: ${e.message}`);
      }
      if (err instanceof BusClosedError) {
        conn.bus.disconnect();
        if (this.conn === conn) this.conn = undefined;
        throw err;
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** One call, retried once on a fresh connection if the bus connection dropped. */
  private async call(
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
    { retry = true }: { retry?: boolean } = {},
  ): Promise<unknown[]> {
    const conn = await this.connect();
    try {
      return await this.raw(conn, { path, destination: SYSTEMD, interface: iface, member, signature, body });
    } catch (err) {
      if (!(err instanceof BusClosedError) || !retry) throw err;
      const fresh = await this.connect();
      return this.raw(fresh, { path, destination: SYSTEMD, interface: iface, member, signature, body });
    }
  }

  private manager(member: string, signature?: string, body?: unknown[]) {
    return this.call(MANAGER_PATH, MANAGER, member, signature, body);
  }

  /** Wait for the JobRemoved of `job` (already buffered if it came before the call's reply). */
  waitForJob(job: string, timeoutMs: number): Promise<string> {
    const done = this.jobResults.get(job);
    if (done !== undefined) {
      this.jobResults.delete(job);
      return Promise.resolve(done);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.jobWaiters.delete(job);
        reject(new Error(`systemd job ${job} did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      // A waiter that lost a race (see SystemdMounter.waitForStart) must not keep the process alive.
      timer.unref();
      this.jobWaiters.set(job, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
    });
  }

  async ping(): Promise<string> {
    const [v] = await this.call(MANAGER_PATH, PROPS, 'Get', 'ss', [MANAGER, 'SystemState']);
    return (v as InstanceType<typeof Variant>).value as string;
  }

  async startTransientUnit(name: string, mode: string, properties: UnitProperty[]): Promise<string> {
    const [job] = await this.manager('StartTransientUnit', 'ssa(sv)a(sa(sv))', [name, mode, properties, []]);
    return job as string;
  }

  async stopUnit(name: string, mode = 'replace'): Promise<string> {
    const [job] = await this.manager('StopUnit', 'ss', [name, mode]);
    return job as string;
  }

  async killUnit(name: string, who: 'main' | 'all', signal: number): Promise<void> {
    await this.manager('KillUnit', 'ssi', [name, who, signal]);
  }

  async resetFailedUnit(name: string): Promise<void> {
    await this.manager('ResetFailedUnit', 's', [name]);
  }

  /** Object path of a loaded unit, or undefined (NoSuchUnit). */
  async getUnit(name: string): Promise<string | undefined> {
    try {
      const [path] = await this.manager('GetUnit', 's', [name]);
      return path as string;
    } catch (err) {
      if (err instanceof SystemdCallError && err.type === 'org.freedesktop.systemd1.NoSuchUnit')
        return undefined;
      throw err;
    }
  }

  async getProperty(path: string, iface: string, prop: string): Promise<unknown> {
    const [v] = await this.call(path, PROPS, 'Get', 'ss', [iface, prop]);
    return (v as InstanceType<typeof Variant>).value;
  }

  /** ActiveState of a unit, or undefined when it is not loaded (garbage-collected or never started). */
  async unitActiveState(name: string): Promise<string | undefined> {
    const path = await this.getUnit(name);
    if (!path) return undefined;
    try {
      return (await this.getProperty(path, 'org.freedesktop.systemd1.Unit', 'ActiveState')) as string;
    } catch (err) {
      if (err instanceof SystemdCallError && /UnknownObject|NoSuchUnit/.test(err.type)) return undefined;
      throw err;
    }
  }

  async listUnitsByPatterns(patterns: string[], states: string[] = []): Promise<UnitStatus[]> {
    const [units] = await this.manager('ListUnitsByPatterns', 'asas', [states, patterns]);
    return (units as unknown[][]).map((u) => ({
      name: u[0] as string,
      description: u[1] as string,
      loadState: u[2] as string,
      activeState: u[3] as string,
      subState: u[4] as string,
    }));
  }

  /** ExecStart of a service unit (path and argv of each command). */
  async execStart(name: string): Promise<ExecCommand[]> {
    const path = await this.getUnit(name);
    if (!path) return [];
    const value = (await this.getProperty(
      path,
      'org.freedesktop.systemd1.Service',
      'ExecStart',
    )) as unknown[][];
    return value.map((c) => ({ path: c[0] as string, argv: c[1] as string[] }));
  }

  /**
   * End the socket under the client without telling it, as a dbus-daemon restart would: the next
   * call finds the connection dead, reconnects and retries.
   */
  dropConnection(): void {
    this.conn?.bus.disconnect();
  }

  async close(): Promise<void> {
    const conn = this.conn;
    this.conn = undefined;
    conn?.bus.disconnect();
    for (const [job, waiter] of this.jobWaiters) {
      this.jobWaiters.delete(job);
      waiter('canceled');
    }
  }
}

export { Variant };
