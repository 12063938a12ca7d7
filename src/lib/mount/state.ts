import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeSecretFile } from './credentials.js';

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
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as StateFile;
      for (const [target, rec] of Object.entries(parsed.mounts ?? {})) state.mounts.set(target, rec);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new Error(`cannot read mounter state file ${file}: ${(err as Error).message}`);
      }
    }
    return state;
  }

  get(target: string): MountRecord | undefined {
    return this.mounts.get(target);
  }

  all(): MountRecord[] {
    return [...this.mounts.values()];
  }

  put(record: MountRecord): Promise<void> {
    this.mounts.set(record.target, record);
    return this.persist();
  }

  delete(target: string): Promise<void> {
    this.mounts.delete(target);
    return this.persist();
  }

  private persist(): Promise<void> {
    const next = this.chain.then(() => {
      const body: StateFile = { version: 1, mounts: Object.fromEntries(this.mounts) };
      return writeSecretFile(this.file, `${JSON.stringify(body, null, 2)}\n`);
    });
    this.chain = next.catch(() => {});
    return next;
  }
}
