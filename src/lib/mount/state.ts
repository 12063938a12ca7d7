import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';

export type MounterKind = 'systemd' | 'process';

/** How to find the FUSE daemon of a mount again, after a restart of the mounter. */
export interface DaemonRef {
  kind: MounterKind;
  unit?: string;
  pid?: number;
  /** /proc/<pid>/stat start time: guards against a reused PID. */
  pidStartTime?: string;
}

/** What the mounter knows about one published target (kept in a small JSON file). */
export interface MountRecord {
  target: string;
  id: string;
  volumeId: string;
  bucket: string;
  fuseBinary: string;
  readonly: boolean;
  daemon: DaemonRef;
  logFile: string;
  credentialFiles: string[];
  publishedAt: string;
}

interface StateFile {
  version: 1;
  mounts: Record<string, MountRecord>;
}

/**
 * The mounter's state file: the mounts it published and their daemons. Every change rewrites the
 * file atomically (0600); writes are serialised so 50 concurrent publishes cannot lose one another.
 */
export class MountState {
  private mounts = new Map<string, MountRecord>();
  private chain: Promise<void> = Promise.resolve();

  private constructor(readonly file: string) {}

  static async load(file: string): Promise<MountState> {
    const state = new MountState(file);
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await state.reload();
    return state;
  }

  /** Re-read the file: `doctor mounts --fix` may have dropped records behind the daemon's back. */
  private async reload(): Promise<void> {
    try {
      const parsed = JSON.parse(await readFile(this.file, 'utf8')) as StateFile;
      this.mounts = new Map(Object.entries(parsed.mounts ?? {}));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new Error(`cannot read mounter state file ${this.file}: ${(err as Error).message}`);
      }
      this.mounts = new Map();
    }
  }

  get(target: string): MountRecord | undefined {
    return this.mounts.get(target);
  }

  all(): MountRecord[] {
    return [...this.mounts.values()];
  }

  put(record: MountRecord): Promise<void> {
    return this.update((m) => m.set(record.target, record));
  }

  delete(target: string): Promise<void> {
    return this.update((m) => m.delete(target));
  }

  /** Read-modify-write of one change, serialised with every other change of this process. */
  private update(change: (mounts: Map<string, MountRecord>) => void): Promise<void> {
    const next = this.chain.then(async () => {
      await this.reload();
      change(this.mounts);
      const body: StateFile = { version: 1, mounts: Object.fromEntries(this.mounts) };
      await writeFileAtomic(this.file, `${JSON.stringify(body, null, 2)}\n`);
    });
    this.chain = next.catch(() => {});
    return next;
  }
}
