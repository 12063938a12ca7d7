import type { BlockBackend } from '../../lib/nbd/backend.js';
import { FileBackend } from '../../lib/nbd/file-backend.js';
import type { ClientViews } from '../../lib/nbd/server.js';
import { ReservedReplica } from './reservation.js';

export interface ReplicaMeta {
  uuid: string;
  name: string;
  size: number;
  thin: boolean;
  share: 'none' | 'nbd';
  /** Snapshot this replica was cloned from, if any. */
  snapshotSource?: string;
  createdAt: string;
}

/**
 * A replica: a sparse file in a pool, served as a block backend to local nexuses and NBD clients.
 * Writes pass a gate that a snapshot closes to take a consistent copy.
 */
export class Replica implements BlockBackend, ClientViews {
  private inflightWrites = 0;
  private idleWaiters: (() => void)[] = [];
  private gate: Promise<void> | null = null;
  /** Nexuses (uuid) on this node that use the replica as a local child. */
  readonly usedBy = new Set<string>();
  /** The nexus holding the reservation (reservation.ts): the last one to open the replica. */
  holder: string | null = null;

  constructor(
    readonly meta: ReplicaMeta,
    readonly poolName: string,
    readonly path: string,
    private file: FileBackend,
  ) {}

  static async open(meta: ReplicaMeta, poolName: string, path: string): Promise<Replica> {
    return new Replica(meta, poolName, path, await FileBackend.open(path, meta.size));
  }

  /** The replica as nexus `holder` uses it; opening takes the reservation from any other nexus. */
  forClient(holder: string): ReservedReplica {
    return new ReservedReplica(this, holder);
  }

  get uuid(): string {
    return this.meta.uuid;
  }
  get size(): number {
    return this.meta.size;
  }

  read(buf: Buffer, offset: number): Promise<void> {
    return this.file.read(buf, offset);
  }

  private async writing<T>(op: () => Promise<T>): Promise<T> {
    while (this.gate) await this.gate;
    this.inflightWrites++;
    try {
      return await op();
    } finally {
      if (--this.inflightWrites === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    return this.writing(() => this.file.write(buf, offset, fua));
  }
  flush(): Promise<void> {
    return this.file.flush();
  }
  trim(offset: number, length: number): Promise<void> {
    return this.writing(() => this.file.trim(offset, length));
  }
  writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    return this.writing(() => this.file.writeZeroes(offset, length, fua));
  }

  /** Hold new writes, wait for in-flight ones, run `fn`, release. */
  async withWritesHeld<T>(fn: () => Promise<T>): Promise<T> {
    while (this.gate) await this.gate;
    let release!: () => void;
    this.gate = new Promise((r) => {
      release = r;
    });
    try {
      if (this.inflightWrites > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      await this.file.flush();
      return await fn();
    } finally {
      this.gate = null;
      release();
    }
  }

  /** Grow the replica (the file is extended sparsely). */
  async resize(size: number): Promise<void> {
    await this.withWritesHeld(async () => {
      const { truncate } = await import('node:fs/promises');
      await truncate(this.path, size);
      this.meta.size = size;
      this.file.size = size;
    });
  }

  async close(): Promise<void> {
    await this.file.close();
  }
}
