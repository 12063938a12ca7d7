import { rmSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import Database from 'better-sqlite3';

/**
 * The benchmarks' raw SQLite peer with the embedded store's own settings (src/lib/store/
 * embedded-db.ts, embedded-sync.ts): WAL, synchronous=NORMAL, one IMMEDIATE transaction per
 * operation, each acknowledged only after an fsync of the WAL file; an fsync that starts while
 * another runs is shared by every commit that lands meanwhile (group commit). The same durability
 * as the store, without the store: no revisions, history, leases or watch.
 */
export class RawSqlite {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private readonly putTxn: (key: string, value: string) => void;
  private readonly casTxn: (key: string, value: string) => boolean;

  private constructor(
    private readonly db: Database.Database,
    private readonly wal: FileHandle,
  ) {
    const put = db.prepare('INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)');
    const exists = db.prepare('SELECT 1 FROM kv WHERE k = ?').pluck();
    this.putTxn = (key, value) => db.transaction(() => put.run(key, value)).immediate();
    // Compare-and-swap on absence (the store's `mod == 0` guard), then the put, in one transaction.
    this.casTxn = (key, value) =>
      db
        .transaction(() => {
          if (exists.get(key)) return false;
          put.run(key, value);
          return true;
        })
        .immediate();
  }

  /**
   * A fresh database at `file` (any old one and its WAL removed first), warmed up: 3000 one-row
   * commits and their deletion, so the WAL has grown to its steady size (past SQLite's automatic
   * checkpoint, 1000 pages) as in a store that has been running. A WAL still growing would charge
   * every fsync a file-size change, which the store's long-lived WAL does not pay.
   */
  static async open(file: string): Promise<RawSqlite> {
    for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)');
    const raw = new RawSqlite(db, await open(`${file}-wal`, 'r'));
    const pad = 'x'.repeat(600);
    for (let i = 0; i < 3000; i++) raw.putTxn(`/warm-up/${i}`, pad);
    raw.clear();
    await raw.sync();
    return raw;
  }

  /** Delete every row (between rounds, as the benchmarks delete their prefix from the store). */
  clear(): void {
    this.db.exec('DELETE FROM kv');
  }

  async put(key: string, value: string): Promise<void> {
    this.putTxn(key, value);
    await this.sync();
  }

  /** Put `key` only if absent; false (nothing written) when it exists. */
  async createIfAbsent(key: string, value: string): Promise<boolean> {
    const done = this.casTxn(key, value);
    await this.sync();
    return done;
  }

  async close(): Promise<void> {
    await this.queued?.catch(() => undefined);
    await this.running?.catch(() => undefined);
    await this.wal.close();
    this.db.close();
  }

  private sync(): Promise<void> {
    if (!this.running) {
      this.running = this.wal.sync().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    // The running fsync may have started before this commit reached the file: the next one counts.
    this.queued ??= this.running.then(
      () => this.startQueued(),
      () => this.startQueued(),
    );
    return this.queued;
  }

  private startQueued(): Promise<void> {
    this.queued = undefined;
    return this.sync();
  }
}
