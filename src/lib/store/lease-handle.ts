import { ConflictError, NotFoundError } from '../errors.js';
import type { Lease } from './types.js';

/** The backend operations a lease handle needs; ids are lowercase hex. */
export interface LeaseBackend {
  /** Renew the lease to its full TTL; false when it no longer exists (expired or revoked). */
  keepAlive(id: string): Promise<boolean>;
  revoke(id: string): Promise<void>;
  put(id: string, key: string, value: string): Promise<{ revision: number }>;
}

/**
 * One lease as both backends hand it out: automatic keepalive every ttl/3, and a `lost` signal that
 * aborts when a keepalive finds the lease gone, when no keepalive succeeded for a whole TTL (the
 * lease may have expired on the server, so a single writer must stop), or when it is revoked.
 */
export class LeaseHandle implements Lease {
  private readonly lostController = new AbortController();
  private keepAliveTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  /**
   * When the last successful renewal was sent, on performance.now() (the server's expiry is at
   * most TTL after it): a step of the wall clock must not end a lease that is kept alive.
   */
  private renewedAt: number;
  private stopped = false;
  private inFlight: Promise<void> | undefined;

  constructor(
    readonly id: string,
    readonly ttlSeconds: number,
    private readonly backend: LeaseBackend,
    /** performance.now() when the grant was sent. */
    grantedAt: number,
    autoKeepAlive: boolean,
  ) {
    this.renewedAt = grantedAt;
    this.armWatchdog();
    if (autoKeepAlive) {
      this.keepAliveTimer = setInterval(() => this.backgroundKeepAlive(), (ttlSeconds * 1000) / 3);
      this.keepAliveTimer.unref();
    }
  }

  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  put(key: string, value: string): Promise<{ revision: number }> {
    return this.backend.put(this.id, key, value).catch((err) => {
      if (err instanceof NotFoundError) this.markLost('lease expired or revoked');
      throw err;
    });
  }

  async keepAliveOnce(): Promise<void> {
    if (this.lost.aborted) throw new NotFoundError('lease', this.id, { suggestions: ['grant a new lease'] });
    const sentAt = performance.now();
    const alive = await this.backend.keepAlive(this.id);
    if (!alive) {
      this.markLost('lease expired or revoked');
      throw new NotFoundError('lease', this.id, { suggestions: ['grant a new lease'] });
    }
    if (this.lost.aborted) return;
    this.renewedAt = Math.max(this.renewedAt, sentAt);
    this.armWatchdog();
  }

  async revoke(): Promise<void> {
    this.stop();
    await this.inFlight;
    await this.backend.revoke(this.id);
    this.markLost('lease revoked');
  }

  release(): void {
    this.stop();
  }

  private backgroundKeepAlive(): void {
    if (this.inFlight || this.stopped) return;
    // Failures other than "lease gone" are retried at the next tick; the watchdog ends the wait.
    this.inFlight = this.keepAliveOnce()
      .catch(() => undefined)
      .finally(() => {
        this.inFlight = undefined;
      });
  }

  private armWatchdog(): void {
    clearTimeout(this.watchdog);
    if (this.stopped) return;
    const remaining = this.renewedAt + this.ttlSeconds * 1000 - performance.now();
    this.watchdog = setTimeout(
      () => this.markLost('no keepalive succeeded within the lease TTL'),
      Math.max(0, remaining),
    );
    this.watchdog.unref();
  }

  private stop(): void {
    this.stopped = true;
    clearInterval(this.keepAliveTimer);
    clearTimeout(this.watchdog);
  }

  private markLost(reason: string): void {
    this.stop();
    if (!this.lostController.signal.aborted) {
      this.lostController.abort(new ConflictError('LEASE_LOST', `lease ${this.id} lost: ${reason}`));
    }
  }
}

/**
 * A new LeaseHandle kept in `tracked` (the backend's open leases, released on close) until it is lost
 * or revoked. Untracking before the backend revoke is unobservable: `revoke()` has stopped the handle.
 */
export function trackedLeaseHandle(
  tracked: Set<LeaseHandle>,
  id: string,
  ttlSeconds: number,
  backend: LeaseBackend,
  grantedAt: number,
  autoKeepAlive: boolean,
): LeaseHandle {
  const handle: LeaseHandle = new LeaseHandle(
    id,
    ttlSeconds,
    {
      ...backend,
      revoke: async (hex) => {
        tracked.delete(handle);
        await backend.revoke(hex);
      },
    },
    grantedAt,
    autoKeepAlive,
  );
  tracked.add(handle);
  handle.lost.addEventListener('abort', () => tracked.delete(handle), { once: true });
  return handle;
}
