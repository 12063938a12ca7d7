import { type FileHandle, open } from 'node:fs/promises';
import { StoreUnavailableError } from '../errors.js';

/**
 * Makes commits durable without blocking the event loop. The database runs with
 * `synchronous = NORMAL` (WAL: a commit is written but not fsynced; checkpoints still sync, so the
 * file stays consistent), and every write waits here for an fsync of the WAL file on libuv's
 * thread pool before it is acknowledged. Commits that land while an fsync runs share the next one:
 * group commit for free, and the event loop keeps serving while the disk works.
 */
export class WalSync {
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** Kept open: SQLite never removes the WAL while a connection (ours) is open. */
  private handle: Promise<FileHandle> | undefined;

  constructor(
    private readonly walPath: string,
    private readonly endpoint: string,
  ) {}

  /** Resolves once every commit made before the call is on disk. */
  sync(): Promise<void> {
    if (!this.running) {
      this.running = this.fsync().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    // The running fsync may have started before this commit's write reached the file: wait for it,
    // then for one more, shared by everything that arrives meanwhile.
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

  /** Close the WAL handle once the fsyncs under way are done (the store is closing). */
  async close(): Promise<void> {
    await this.queued?.catch(() => undefined);
    await this.running?.catch(() => undefined);
    const handle = this.handle;
    this.handle = undefined;
    await (await handle?.catch(() => undefined))?.close();
  }

  private async fsync(): Promise<void> {
    try {
      this.handle ??= open(this.walPath, 'r');
      await (await this.handle).sync();
    } catch (err) {
      const handle = this.handle; // open afresh next time
      this.handle = undefined;
      void handle?.then((h) => h.close()).catch(() => undefined);
      throw new StoreUnavailableError(
        this.endpoint,
        `a committed write could not be flushed to disk: ${(err as Error).message}`,
        { cause: err, suggestions: [`check the disk and the file system holding ${this.walPath}`] },
      );
    }
  }
}
