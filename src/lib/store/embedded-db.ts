import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StorctlError, StoreFullError, StoreUnavailableError } from '../errors.js';
import type { KeyValue } from './types.js';

/**
 * The embedded store's SQLite schema and statements (kine-style: current keys plus an event
 * history). `meta` holds the one global revision counter, the compaction point, and the boot whose
 * clock the leases' expiry times are on (`boot`, `clock_base`: embedded.ts).
 */

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', 1), ('revision', 1), ('compact_revision', 0);
INSERT OR IGNORE INTO meta (name, value) VALUES ('boot', 0), ('clock_base', 0);
CREATE TABLE IF NOT EXISTS kv (
  key TEXT NOT NULL UNIQUE, value TEXT NOT NULL,
  create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL, version INTEGER NOT NULL, lease INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS kv_by_lease ON kv (lease) WHERE lease != 0;
CREATE TABLE IF NOT EXISTS history (
  rev INTEGER NOT NULL, sub INTEGER NOT NULL, key TEXT NOT NULL, deleted INTEGER NOT NULL,
  value TEXT, create_rev INTEGER, version INTEGER, lease INTEGER,
  prev_value TEXT, prev_create INTEGER, prev_mod INTEGER, prev_version INTEGER, prev_lease INTEGER,
  UNIQUE (rev, sub));
CREATE TABLE IF NOT EXISTS leases (id INTEGER PRIMARY KEY, ttl INTEGER NOT NULL, expires_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS leases_by_expiry ON leases (expires_at);
`;

export interface KvRow {
  key: string;
  value: string;
  create_rev: number;
  mod_rev: number;
  version: number;
  lease: number;
}

export interface EventRow {
  rev: number;
  sub: number;
  key: string;
  deleted: number;
  value: string | null;
  create_rev: number | null;
  version: number | null;
  lease: number | null;
  prev_value: string | null;
  prev_create: number | null;
  prev_mod: number | null;
  prev_version: number | null;
  prev_lease: number | null;
}

export function toKeyValue(row: KvRow): KeyValue {
  return {
    key: row.key,
    value: row.value,
    createRevision: row.create_rev,
    modRevision: row.mod_rev,
    version: row.version,
    lease: row.lease.toString(16),
  };
}

const LIVE = 'LEFT JOIN leases l ON l.id = k.lease WHERE (k.lease = 0 OR l.expires_at > @now)';
const KV_COLS = 'k.key, k.value, k.create_rev, k.mod_rev, k.version, k.lease';
// '' as the end bound means "no upper bound" (the empty prefix).
const IN_RANGE = "k.key >= @from AND (@end = '' OR k.key < @end)";

export function prepareStatements(db: Database.Database) {
  return {
    meta: db.prepare<[string], number>('SELECT value FROM meta WHERE name = ?').pluck(),
    setMeta: db.prepare<[number, string]>('UPDATE meta SET value = ? WHERE name = ?'),
    // Reads hide keys of expired leases even before a writer sweeps them.
    getLive: db.prepare<{ key: string; now: number }, KvRow>(
      `SELECT ${KV_COLS} FROM kv k ${LIVE} AND k.key = @key`,
    ),
    rangeLive: db.prepare<{ from: string; end: string; now: number; limit: number }, KvRow>(
      `SELECT ${KV_COLS} FROM kv k ${LIVE} AND ${IN_RANGE} ORDER BY k.key LIMIT @limit`,
    ),
    // Rows as [key, value] arrays: a listing's pages need nothing else.
    rangeLiveKeysValues: db
      .prepare<{ from: string; end: string; now: number; limit: number }, [string, string]>(
        `SELECT k.key, k.value FROM kv k ${LIVE} AND ${IN_RANGE} ORDER BY k.key LIMIT @limit`,
      )
      .raw(),
    getRaw: db.prepare<[string], KvRow>(
      'SELECT key, value, create_rev, mod_rev, version, lease FROM kv WHERE key = ?',
    ),
    rangeRaw: db.prepare<{ from: string; end: string }, KvRow>(
      `SELECT ${KV_COLS} FROM kv k WHERE ${IN_RANGE} ORDER BY k.key`,
    ),
    byLease: db.prepare<[number], KvRow>(
      'SELECT key, value, create_rev, mod_rev, version, lease FROM kv WHERE lease = ? ORDER BY key',
    ),
    upsert: db.prepare<KvRow>(
      `INSERT INTO kv (key, value, create_rev, mod_rev, version, lease)
       VALUES (@key, @value, @create_rev, @mod_rev, @version, @lease)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, mod_rev = excluded.mod_rev,
         version = excluded.version, lease = excluded.lease`,
    ),
    deleteKey: db.prepare<[string]>('DELETE FROM kv WHERE key = ?'),
    insertEvent: db.prepare<EventRow>(
      `INSERT INTO history (rev, sub, key, deleted, value, create_rev, version, lease,
         prev_value, prev_create, prev_mod, prev_version, prev_lease)
       VALUES (@rev, @sub, @key, @deleted, @value, @create_rev, @version, @lease,
         @prev_value, @prev_create, @prev_mod, @prev_version, @prev_lease)`,
    ),
    eventsAfter: db.prepare<{ rev: number; sub: number; from: string; end: string; limit: number }, EventRow>(
      `SELECT * FROM history k WHERE (rev, sub) > (@rev, @sub) AND ${IN_RANGE} ORDER BY rev, sub LIMIT @limit`,
    ),
    compactBefore: db.prepare<[number]>('DELETE FROM history WHERE rev < ?'),
    expiredLeases: db
      .prepare<[number], number>('SELECT id FROM leases WHERE expires_at <= ? ORDER BY expires_at')
      .pluck(),
    anyExpired: db.prepare<[number], number>('SELECT 1 FROM leases WHERE expires_at <= ? LIMIT 1').pluck(),
    allLeases: db.prepare<[], number>('SELECT id FROM leases').pluck(),
    insertLease: db.prepare<[number, number, number]>(
      'INSERT INTO leases (id, ttl, expires_at) VALUES (?, ?, ?)',
    ),
    renewLease: db.prepare<{ id: number; now: number }>(
      'UPDATE leases SET expires_at = @now + ttl * 1000 WHERE id = @id AND expires_at > @now',
    ),
    getLease: db.prepare<[number], { ttl: number; expires_at: number }>(
      'SELECT ttl, expires_at FROM leases WHERE id = ?',
    ),
    deleteLease: db.prepare<[number]>('DELETE FROM leases WHERE id = ?'),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;

/**
 * mkdir -p with mode 0700 for every directory created. Not mkdirSync's `recursive`: on some
 * filesystems (e.g. under /proc) Node's recursive mkdir loops forever on ENOENT.
 */
function makeDirs(dir: string): void {
  if (existsSync(dir)) return;
  const parent = dirname(dir);
  if (parent !== dir) makeDirs(parent);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** How long one SQLite call may block waiting for another process's lock before retrying async. */
export const SYNC_BUSY_MS = 5;

export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Open (creating if needed) the database file: parent dir 0700, file 0600 before SQLite touches it
 * (SQLite gives its -wal/-shm files the database file's mode), WAL, a busy timeout so writers of
 * several processes queue instead of failing.
 */
export function openDatabase(path: string, endpoint: string, busyTimeoutMs: number): Database.Database {
  const deadline = Date.now() + busyTimeoutMs;
  for (let attempt = 1; ; attempt++) {
    let db: Database.Database | undefined;
    try {
      makeDirs(dirname(path));
      closeSync(openSync(path, 'a', 0o600));
      db = new Database(path, { timeout: busyTimeoutMs });
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      db.pragma('journal_mode = WAL');
      // NORMAL: commits are not fsynced inside SQLite (that would block the event loop); the store
      // fsyncs the WAL off-thread before acknowledging a write (WalSync), so an acknowledged write
      // still survives power loss, like etcd's fsync per commit. Checkpoints sync as before.
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = OFF');
      const schema = db;
      schema.transaction(() => schema.exec(SCHEMA)).immediate();
      // From now on SQLite waits only briefly (that wait blocks the event loop); callers retry async.
      db.pragma(`busy_timeout = ${SYNC_BUSY_MS}`);
      return db;
    } catch (err) {
      db?.close();
      // SQLite answers BUSY at once, without waiting out the busy timeout, when waiting could
      // deadlock: processes opening a new database together each hold a read lock on it while
      // switching it to WAL. Opening again resolves it; only a lock held past the timeout fails.
      if (!isBusy(err) || Date.now() >= deadline) throw mapSqliteError(err, endpoint, busyTimeoutMs);
      Atomics.wait(SLEEPER, 0, 0, Math.min(10 * attempt, 100));
    }
  }
}

/** For a short synchronous pause between attempts to open (startup only). */
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

/**
 * SQLite reports some damage to the file (a record size or page number out of bounds) as out of
 * memory, which would send an operator after the wrong problem: after SQLITE_NOMEM a quick check of
 * the file says whether it is damaged, and then that is the error (SQLITE_CORRUPT) to report.
 */
export function damageBehind(db: Database.Database, err: unknown): Error | undefined {
  if ((err as { code?: unknown })?.code !== 'SQLITE_NOMEM') return undefined;
  try {
    const found = db.pragma('quick_check(1)', { simple: true });
    if (found === 'ok') return undefined;
    return Object.assign(new Error(`database disk image is malformed: ${String(found)}`), {
      code: 'SQLITE_CORRUPT',
    });
  } catch (check) {
    return (check as { code?: unknown })?.code === 'SQLITE_CORRUPT' ? (check as Error) : undefined;
  }
}

/** SQLite failures as storctl errors: the file is locked, missing, unreadable or not a store. */
export function mapSqliteError(err: unknown, endpoint: string, busyTimeoutMs: number): Error {
  if (err instanceof StorctlError) return err;
  const code = (err as { code?: unknown })?.code;
  const message = err instanceof Error ? err.message : String(err);
  const path = endpoint.replace(/^sqlite:/, '');
  if (isBusy(err)) {
    return new StoreUnavailableError(
      endpoint,
      `the database stayed locked by another process for ${busyTimeoutMs} ms`,
      {
        suggestions: ['check for a stuck storctl process holding the store open'],
        cause: err,
      },
    );
  }
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return new StoreUnavailableError(endpoint, `${path} is not a usable storctl database (${message})`, {
      suggestions: ['point --store at the right file, or restore it from `storctl store dump` output'],
      cause: err,
    });
  }
  // SQLite rolls the transaction back when a page cannot be written for want of space.
  if (code === 'SQLITE_FULL')
    return new StoreFullError(endpoint, message, {
      suggestions: [`free space on the disk that holds ${path} (\`df -h\`), then retry`],
      cause: err,
    });
  if (
    (typeof code === 'string' && /^SQLITE_(CANTOPEN|READONLY|IOERR|PERM|AUTH)/.test(code)) ||
    (typeof code === 'string' && /^E(ACCES|PERM|NOENT|ROFS|NOSPC|ISDIR|NOTDIR)$/.test(code))
  ) {
    return new StoreUnavailableError(endpoint, message, {
      suggestions: [
        `check that ${path} and its directory exist, are writable by this user and the disk is not full`,
      ],
      cause: err,
    });
  }
  return new StorctlError('STORE_FAILED', `store ${endpoint}: ${message}`, 1, { cause: err });
}
