import { randomInt } from 'node:crypto';
import { resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { NotFoundError, StoreUnavailableError, UsageError } from '../errors.js';
import {
  damageBehind,
  isBusy,
  mapSqliteError,
  openDatabase,
  prepareStatements,
  type Statements,
  toKeyValue,
} from './embedded-db.js';
import { WalSync } from './embedded-sync.js';
import { EmbeddedWatch, type HistoryPage, type WatchCursor } from './embedded-watch.js';
import { WriteContext } from './embedded-write.js';
import { bootId, monotonicMs } from './lease-clock.js';
import { type LeaseHandle, trackedLeaseHandle } from './lease-handle.js';
import type {
  KeysValuesRange,
  KeyValue,
  Lease,
  LeaseOptions,
  RangeOptions,
  RangeResult,
  Store,
  TxnRequest,
  TxnResult,
  Watch,
  WatchOptions,
} from './types.js';
import {
  assertKey,
  assertLeaseId,
  assertTtl,
  checkRange,
  checkWatch,
  prefixEnd,
  validateTxn,
} from './validate.js';

export interface EmbeddedStoreOptions {
  /** Revisions of history kept for watches; older history is compacted automatically. */
  historyRetention?: number;
  /** How long a write waits for another process's write to finish. */
  busyTimeoutMs?: number;
  /** How often watches look for writes of other processes (and sweep expired leases). */
  pollIntervalMs?: number;
}

const PAGE = 1000;

/** Stores of this process by database file: a write wakes their watches at once. */
const storesByFile = new Map<string, Set<EmbeddedStore>>();

/** Which leases a write ends before its own work: every one (a new boot), the expired ones, none. */
type LeaseSweep = 'all' | 'expired' | 'none';

interface QueuedWrite {
  fn: (w: WriteContext) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}
type WriteOutcome = { ok: true; result: unknown } | { ok: false; error: unknown };

/** A range statement's parameters; one row past `limit` tells whether more remain (0: no limit). */
const rangeParams = (prefix: string, options: RangeOptions, limit: number, now: number) => ({
  from: options.startKey ?? prefix,
  end: options.endKey ?? prefixEnd(prefix),
  now,
  limit: limit === 0 ? -1 : limit + 1,
});

/**
 * The embedded backend: etcd semantics on one SQLite file (better-sqlite3, WAL). Every write is one
 * IMMEDIATE transaction that first sweeps expired leases, so several processes can share the file.
 */
export class EmbeddedStore implements Store {
  readonly backend = 'embedded' as const;
  readonly endpoint: string;
  private readonly db: Database.Database;
  private readonly st: Statements;
  private readonly file: string;
  private readonly retention: number;
  private readonly busyTimeoutMs: number;
  private readonly pollIntervalMs: number;
  private readonly walSync: WalSync;
  /** Set while a call of this process waits for another process's write lock (see run). */
  private lockWait: Promise<void> | undefined;
  private readonly watches = new Set<EmbeddedWatch>();
  private readonly leases = new Set<LeaseHandle>();
  private ticker: NodeJS.Timeout | undefined;
  private pumpScheduled = false;
  private polledRevision = 0;
  private closed = false;
  /** One write: its own revision, after ending the leases `leases` says. */
  private readonly writeOne = (fn: (w: WriteContext) => unknown, leases: LeaseSweep) => {
    const w = new WriteContext(this.st, this.leaseNow(), this.retention);
    if (leases === 'all') w.revokeAllLeases();
    else if (leases === 'expired') w.sweepExpiredLeases();
    const result = fn(w);
    return { result, changed: w.finish() };
  };
  /** writeOne in a savepoint of the batch's transaction (a nested better-sqlite3 transaction). */
  private readonly savepoint: typeof this.writeOne;
  /** Writes issued in this turn of the event loop, committed together (see write). */
  private queued: QueuedWrite[] = [];
  /**
   * Leases expire on this boot's monotonic clock (lease-clock.ts), offset by `clockBase`: the wall
   * time the boot began, as the first writer of the boot recorded it in `meta` (every process of the
   * boot then reads the same lease times). Until one has, wall time stands in.
   */
  private readonly boot = bootId();
  private clockBase: number;
  /** `clockBase` is the one stored for this boot (not wall time standing in). */
  private clockStored: boolean;

  private constructor(path: string, options: EmbeddedStoreOptions) {
    this.file = resolve(path);
    this.endpoint = `sqlite:${path}`;
    this.retention = options.historyRetention ?? 10_000;
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
    this.pollIntervalMs = options.pollIntervalMs ?? 50;
    this.db = openDatabase(this.file, this.endpoint, this.busyTimeoutMs);
    this.st = prepareStatements(this.db);
    this.clockStored = this.boot !== 0 && this.st.meta.get('boot') === this.boot;
    this.clockBase = this.clockStored ? this.st.meta.get('clock_base')! : Date.now() - monotonicMs();
    this.savepoint = this.db.transaction(this.writeOne);
    this.walSync = new WalSync(`${this.file}-wal`, this.endpoint);
    const peers = storesByFile.get(this.file) ?? new Set<EmbeddedStore>();
    storesByFile.set(this.file, peers);
    peers.add(this);
  }

  /** Open (creating when missing) the store file; parent dir 0700, file 0600. */
  static open(path: string, options: EmbeddedStoreOptions = {}): EmbeddedStore {
    return new EmbeddedStore(path, options);
  }

  async get(key: string): Promise<KeyValue | null> {
    assertKey(key);
    const row = await this.run(() => this.st.getLive.get({ key, now: this.leaseNow() }));
    return row ? toKeyValue(row) : null;
  }

  async range(prefix: string, options: RangeOptions = {}): Promise<RangeResult> {
    const limit = checkRange(prefix, options);
    return this.run(() =>
      this.db.transaction(() => {
        const rows = this.st.rangeLive.all(rangeParams(prefix, options, limit, this.leaseNow()));
        const more = limit > 0 && rows.length > limit;
        if (more) rows.pop();
        return { kvs: rows.map(toKeyValue), more, revision: this.st.meta.get('revision')! };
      })(),
    );
  }

  async rangeKeysValues(prefix: string, options: RangeOptions & { limit: number }): Promise<KeysValuesRange> {
    const limit = checkRange(prefix, options);
    return this.run(() => {
      const rows = this.st.rangeLiveKeysValues.all(rangeParams(prefix, options, limit, this.leaseNow()));
      const more = limit > 0 && rows.length > limit;
      if (more) rows.pop();
      const keys = new Array<string>(rows.length);
      const values = new Array<string>(rows.length);
      for (let i = 0; i < rows.length; i++) [keys[i], values[i]] = rows[i];
      return { keys, values, more };
    });
  }

  async put(key: string, value: string, options: { lease?: string } = {}): Promise<{ revision: number }> {
    const r = await this.txn({ compare: [], success: [{ type: 'put', key, value, lease: options.lease }] });
    return { revision: r.revision };
  }

  async delete(key: string): Promise<{ deleted: number; revision: number }> {
    const r = await this.txn({ compare: [], success: [{ type: 'delete', key }] });
    return { deleted: r.responses[0].deleted ?? 0, revision: r.revision };
  }

  async deletePrefix(prefix: string): Promise<{ deleted: number; revision: number }> {
    const r = await this.txn({ compare: [], success: [{ type: 'deletePrefix', prefix }] });
    return { deleted: r.responses[0].deleted ?? 0, revision: r.revision };
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    const plan = validateTxn(request);
    return this.write((w) => w.txn(plan));
  }

  async revision(): Promise<number> {
    return this.run(() => this.st.meta.get('revision')!);
  }

  async grantLease(ttlSeconds: number, options: LeaseOptions = {}): Promise<Lease> {
    assertTtl(ttlSeconds);
    const grantedAt = performance.now();
    const id = await this.write((w) => {
      for (;;) {
        const candidate = randomInt(1, 2 ** 48);
        if (this.st.getLease.get(candidate)) continue;
        this.st.insertLease.run(candidate, ttlSeconds, w.now + ttlSeconds * 1000);
        return candidate;
      }
    });
    return trackedLeaseHandle(
      this.leases,
      id.toString(16),
      ttlSeconds,
      {
        keepAlive: async (hex) =>
          this.write((w) => this.st.renewLease.run({ id: parseInt(hex, 16), now: w.now }).changes === 1),
        revoke: (hex) => this.write((w) => w.revokeLease(parseInt(hex, 16))),
        put: (hex, key, value) => this.put(key, value, { lease: hex }),
      },
      grantedAt,
      options.keepAlive !== false,
    );
  }

  async revokeLease(id: string): Promise<void> {
    assertLeaseId(id);
    const numeric = parseInt(id, 16);
    if (numeric > Number.MAX_SAFE_INTEGER) return; // never one of ours
    await this.write((w) => w.revokeLease(numeric));
  }

  async leaseTimeToLive(id: string): Promise<number> {
    assertLeaseId(id);
    const lease = await this.run(() => this.st.getLease.get(parseInt(id, 16)));
    const remainingMs = lease ? lease.expires_at - this.leaseNow() : -1;
    return remainingMs > 0 ? Math.floor(remainingMs / 1000) : -1;
  }

  async watch(prefix: string, options: WatchOptions = {}): Promise<Watch> {
    const from = checkWatch(prefix, options);
    const start = from ?? (await this.revision()) + 1;
    const w = new EmbeddedWatch(prefix, prefixEnd(prefix), start, (closed) => {
      this.watches.delete(closed);
      if (this.watches.size === 0) this.stopTicker();
    });
    this.watches.add(w);
    this.startTicker();
    this.schedulePump();
    return w;
  }

  async compact(revision: number): Promise<void> {
    if (!Number.isInteger(revision) || revision < 1)
      throw new UsageError(`compact revision must be >= 1, got ${revision}`);
    await this.write((w) => w.compact(revision));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    for (const w of [...this.watches]) await w.close();
    for (const l of [...this.leases]) l.release();
    this.stopTicker();
    this.closed = true;
    storesByFile.get(this.file)?.delete(this);
    if (storesByFile.get(this.file)?.size === 0) storesByFile.delete(this.file);
    await this.walSync.close();
    this.db.close();
  }

  /**
   * Queue a write. The writes a process issues in one turn of its event loop (64 callers resumed by
   * one fsync) commit in one IMMEDIATE transaction, each in a savepoint of its own with its own
   * revision: one transaction's pages (the revision counter, the history's last page) are written
   * to the WAL once for all of them instead of once each. A write that throws is rolled back alone.
   */
  private write<T>(fn: (w: WriteContext) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (this.queued.length === 1) queueMicrotask(() => void this.commitQueued());
    });
  }

  private async commitQueued(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    let done: { outcomes: WriteOutcome[]; changed: boolean };
    try {
      done = await this.run(() => this.db.transaction(() => this.applyBatch(batch)).immediate());
      this.clockStored = this.boot !== 0; // committed: the stored boot is this one
      if (done.changed) await this.walSync.sync();
    } catch (error) {
      for (const { reject } of batch) reject(error);
      return;
    }
    if (done.changed) for (const peer of storesByFile.get(this.file) ?? []) peer.schedulePump();
    for (const [i, o] of done.outcomes.entries()) {
      if (o.ok) batch[i].resolve(o.result);
      else batch[i].reject(o.error);
    }
  }

  /** The batch's writes in order, inside its open transaction. */
  private applyBatch(batch: QueuedWrite[]): { outcomes: WriteOutcome[]; changed: boolean } {
    const leases = this.recordBoot();
    if (batch.length === 1) {
      // Alone: no savepoint; its failure rolls the transaction back and fails it.
      const { result, changed } = this.writeOne(batch[0].fn, leases);
      return { outcomes: [{ ok: true, result }], changed };
    }
    let changed = false;
    const outcomes = batch.map(({ fn }, i): WriteOutcome => {
      try {
        const one = this.savepoint(fn, i === 0 ? leases : 'none');
        changed ||= one.changed;
        return { ok: true, result: one.result };
      } catch (error) {
        // The request's own failure (a lease gone, a bad key) fails it alone; SQLite's fail the batch.
        if (!(error instanceof NotFoundError || error instanceof UsageError)) throw error;
        return { ok: false, error };
      }
    });
    return { outcomes, changed };
  }

  /**
   * The first write of a boot records its clock, and every lease then is of an earlier boot: which
   * leases the batch's first write ends. Checked until one write of this process commits: the
   * stored boot changes only with a reboot.
   */
  private recordBoot(): LeaseSweep {
    if (this.boot === 0 || this.clockStored) return 'expired';
    if (this.st.meta.get('boot') === this.boot) {
      this.clockBase = this.st.meta.get('clock_base')!;
      return 'expired';
    }
    this.clockBase = Date.now() - monotonicMs();
    this.st.setMeta.run(this.boot, 'boot');
    this.st.setMeta.run(this.clockBase, 'clock_base');
    return 'all';
  }

  private guard<T>(fn: () => T): T {
    if (this.closed) throw new StoreUnavailableError(this.endpoint, 'the store was closed');
    try {
      return fn();
    } catch (err) {
      throw err instanceof NotFoundError || err instanceof UsageError
        ? err
        : mapSqliteError(damageBehind(this.db, err) ?? err, this.endpoint, this.busyTimeoutMs);
    }
  }

  /**
   * Run `fn` (synchronous SQLite work), retrying while another process holds the write lock. SQLite
   * itself waits only SYNC_BUSY_MS (that wait blocks the event loop); the rest of the busy timeout
   * is spent here between attempts, so lease keepalives and servers keep running meanwhile. While
   * one of this process's calls waits for the lock, the others queue behind it rather than each
   * blocking the event loop on its own attempt (dozens of writers would otherwise stall it).
   */
  private async run<T>(fn: () => T): Promise<T> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      while (this.lockWait) await this.lockWait;
      try {
        return this.guard(fn);
      } catch (err) {
        const busy = err instanceof StoreUnavailableError && isBusy(err.cause);
        if (!busy || Date.now() >= deadline) throw err;
        const wait = new Promise<void>((r) =>
          setTimeout(r, Math.min(2 ** Math.min(attempt, 4), 16) * (0.5 + Math.random())),
        );
        this.lockWait = wait;
        await wait;
        if (this.lockWait === wait) this.lockWait = undefined;
      }
    }
  }

  private readHistory = (from: string, end: string, after: WatchCursor): HistoryPage =>
    this.guard(() =>
      this.db.transaction(() => {
        const events = this.st.eventsAfter.all({ rev: after.rev, sub: after.sub, from, end, limit: PAGE });
        return {
          events,
          complete: events.length < PAGE,
          revision: this.st.meta.get('revision')!,
          compactRevision: this.st.meta.get('compact_revision')!,
        };
      })(),
    );

  private schedulePump(): void {
    if (this.pumpScheduled || this.closed) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      if (this.closed) return;
      for (const w of [...this.watches]) w.pump(this.readHistory);
    });
  }

  private startTicker(): void {
    if (this.ticker) return;
    this.ticker = setInterval(() => this.tick(), this.pollIntervalMs);
  }

  /** Now on the clock lease expiry times are on. */
  private leaseNow(): number {
    return this.clockBase + monotonicMs();
  }

  private stopTicker(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
  }

  /** Notice other processes' writes, and sweep expired leases so their delete events reach watchers. */
  private tick(): void {
    if (this.closed) return;
    try {
      if (this.st.anyExpired.get(this.leaseNow())) void this.write(() => undefined).catch(() => undefined);
      const revision = this.st.meta.get('revision')!;
      if (revision !== this.polledRevision) {
        this.polledRevision = revision;
        this.schedulePump();
      }
    } catch {
      // A busy database: the next tick tries again.
    }
  }
}
