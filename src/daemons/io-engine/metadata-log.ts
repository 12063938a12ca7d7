import { type FileHandle, open, readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../../lib/atomic-file.js';

/**
 * Group-committed metadata as a snapshot file plus an append-only journal. A change appends one
 * line per changed entry to the journal and fsyncs it, so its cost does not grow with the number
 * of entries (rewriting a 10k-replica pool.json per create cost more than the create itself). Once
 * the journal holds as many lines as the snapshot has entries (at least COMPACT_MIN), the next write
 * is a new snapshot instead, which keeps replay short and each change O(1) amortized.
 *
 * The snapshot names its journal generation; compaction writes the snapshot with the next
 * generation (atomically) and only then restarts the journal under it. A journal whose header names
 * another generation is stale and ignored, so a crash between the two steps replays nothing old.
 */
export interface MetadataState {
  /** Full snapshot text holding `gen` as its journal generation. */
  snapshot(gen: number): string;
  /** Journal line (JSON, no newline) with the current value of a changed entry, or its removal. */
  record(key: string): string;
  /** Entries the snapshot holds (sets the compaction threshold). */
  entries(): number;
}

const COMPACT_MIN = 256;

interface Batch {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function batch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // callers that care await it; an unobserved failure is not a crash
  return { promise, resolve, reject };
}

export class MetadataLog {
  private inflight: Batch | null = null;
  private next: Batch | null = null;
  /** Entries changed since the last durable write; `null` = write a whole snapshot. */
  private changed: Set<string> | null = null;
  private journal: FileHandle | null = null;
  private journalLines = 0;
  /** The last write failed: the files are behind the state until a later write succeeds. */
  private behind = false;

  constructor(
    readonly snapshotPath: string,
    readonly journalPath: string,
    private gen: number,
    private readonly state: MetadataState,
    /** Runs before each write (e.g. fsync of directories holding files the new state names). */
    private readonly beforeCommit: () => Promise<void> = async () => {},
    /** Lines already in the journal (replayed at import). */
    journalLines = 0,
  ) {
    this.journalLines = journalLines;
    // Without a journal of this generation the first write is a snapshot (which starts one).
    this.changed = journalLines === 0 ? null : new Set();
  }

  /** Record a change (entry `key`, or everything when absent); resolves once it is durable. */
  save(key?: string): Promise<void> {
    if (key === undefined) this.changed = null;
    else this.changed?.add(key);
    this.next ??= batch();
    const pending = this.next;
    if (!this.inflight) void this.drain(); // takes this.next synchronously
    return pending.promise;
  }

  /** Resolves once every change saved so far is durable (retries a write that failed). */
  durable(): Promise<void> {
    if (this.next) return this.next.promise;
    if (this.inflight) return this.inflight.promise;
    return this.behind ? this.save() : Promise.resolve();
  }

  async close(): Promise<void> {
    await this.durable().catch(() => {});
    await this.journal?.close();
    this.journal = null;
  }

  private async drain(): Promise<void> {
    while (this.next) {
      const current = this.next;
      this.next = null;
      this.inflight = current;
      // Take the changes now, synchronously: they are every change whose save() joined this batch.
      const changed = this.changed;
      this.changed = new Set();
      const lines =
        changed && this.journalLines + changed.size <= Math.max(COMPACT_MIN, this.state.entries())
          ? [...changed].map((k) => `${this.state.record(k)}\n`)
          : null;
      const text = lines ? lines.join('') : this.state.snapshot(this.gen + 1);
      try {
        await this.beforeCommit();
        if (lines) await this.append(text, lines.length);
        else await this.compact(text);
        this.behind = false;
        current.resolve();
      } catch (err) {
        this.behind = true;
        this.changed = null; // the files' state is unknown: the next write is a whole snapshot
        current.reject(err);
      } finally {
        this.inflight = null;
      }
    }
  }

  private async append(text: string, lines: number): Promise<void> {
    this.journal ??= await open(this.journalPath, 'a', 0o600);
    await this.journal.write(text);
    await this.journal.sync();
    this.journalLines += lines;
  }

  private async compact(snapshot: string): Promise<void> {
    await writeFileAtomic(this.snapshotPath, snapshot);
    this.gen++;
    await this.journal?.close();
    this.journal = null;
    // The header binds the journal to the snapshot just written; until it is durable the old
    // journal's header names the old generation and is ignored.
    const fh = await open(this.journalPath, 'w', 0o600);
    try {
      await fh.write(`${JSON.stringify({ gen: this.gen })}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    this.journalLines = 0;
  }
}

/**
 * The journal lines of generation `gen`, in order. A last line left incomplete by a crash (its write
 * was never acknowledged) is dropped; an unreadable line followed by readable ones is corruption.
 * `appendable` is false when the file ends in such a remnant (or belongs to another generation):
 * appending after it would glue the next line to it, so the next write must be a snapshot.
 */
export async function readJournal(
  path: string,
  gen: number,
): Promise<{ records: unknown[]; appendable: boolean }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], appendable: false };
    throw err;
  }
  const lines = text.split('\n');
  const parsed: unknown[] = [];
  let torn = -1;
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(lines[i]);
    } catch {
      if (torn < 0) torn = i;
      continue;
    }
    if (torn >= 0) throw new Error(`journal ${path} line ${torn + 1} is unreadable but later lines are not`);
    parsed.push(value);
  }
  const header = parsed.shift() as { gen?: unknown } | undefined;
  if (header?.gen !== gen) return { records: [], appendable: false };
  return { records: parsed, appendable: torn < 0 && text.endsWith('\n') };
}
