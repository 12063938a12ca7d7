import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Write text so a crash leaves either the old or the new content: unique temp file, fsync, rename, fsync dir. */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  // Unique per write: two writers never share (and truncate) one temp file.
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  try {
    const fh = await open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await fsyncPath(dirname(path));
}

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

/**
 * Group commit of one metadata file. Every save requested while a write is in flight is covered
 * by the next single write, whose content is the state when that write starts. Before the file is
 * renamed into place, `beforeCommit` runs (e.g. fsync of the directories holding files the new state
 * names), so the metadata never points at a file whose directory entry could still be lost.
 */
export class GroupCommitFile {
  private inflight: Batch | null = null;
  private next: Batch | null = null;
  /** The last write failed: the file is behind the state until a later write succeeds. */
  private behind = false;

  constructor(
    readonly path: string,
    /** The file's content for the current state (called once per write). */
    private readonly render: () => string,
    private readonly beforeCommit: () => Promise<void> = async () => {},
  ) {}

  /** Record the current state; resolves once a write containing it is durable. */
  save(): Promise<void> {
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

  private async drain(): Promise<void> {
    while (this.next) {
      const current = this.next;
      this.next = null;
      this.inflight = current;
      try {
        // Snapshot now, synchronously: it holds every change whose save() joined this batch.
        const text = this.render();
        await this.beforeCommit();
        await writeFileAtomic(this.path, text);
        this.behind = false;
        current.resolve();
      } catch (err) {
        this.behind = true;
        current.reject(err);
      } finally {
        this.inflight = null;
      }
    }
  }
}
