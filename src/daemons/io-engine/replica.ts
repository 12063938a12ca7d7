import type { BlockBackend } from '../../lib/nbd/backend.js';
import { FileBackend } from '../../lib/nbd/file-backend.js';
import type { ClientViews } from '../../lib/nbd/server.js';
import type { PoolIoErrors } from './pool-io-errors.js';
import type { PoolSpace } from './pool-space.js';
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

/** Piece of a write near a full pool's capacity that is measured on its own (see `allocating`). */
const MEASURED_PART = 64 * 1024;

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
    /** The pool's capacity guard, which a thin replica's writes pass. */
    private readonly space: PoolSpace,
    /** The pool's record of disk errors, which every failed I/O passes. */
    private readonly errors: PoolIoErrors,
  ) {}

  static async open(
    meta: ReplicaMeta,
    poolName: string,
    path: string,
    space: PoolSpace,
    errors: PoolIoErrors,
  ): Promise<Replica> {
    return new Replica(meta, poolName, path, await FileBackend.open(path, meta.size), space, errors);
  }

  /** Bytes the replica's file holds on disk now. */
  allocatedBytes(): number {
    return this.file.allocatedBytes();
  }

  /** What the replica takes of its pool's capacity with `allocated` bytes on disk: a thick one its whole size. */
  holds(allocated: number): number {
    return this.meta.thin ? allocated : Math.max(allocated, this.size);
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
    return this.file.read(buf, offset).catch(this.errors.seen);
  }

  private async writing<T>(op: () => Promise<T>): Promise<T> {
    while (this.gate) await this.gate;
    this.inflightWrites++;
    try {
      return await op().catch(this.errors.seen);
    } finally {
      if (--this.inflightWrites === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    return this.writing(() =>
      this.fits(buf.length)
        ? this.file.write(buf, offset, fua)
        : this.measured(buf.length, (from, to) =>
            this.file.write(buf.subarray(from, to), offset + from, fua),
          ),
    );
  }

  /** A write of `length` bytes fits the pool whatever it allocates (pool-space.ts): no measuring. */
  private fits(length: number): boolean {
    return !this.meta.thin || this.space.take(length);
  }

  /**
   * A thin write near the pool's capacity: `part(from, to)` writes bytes [from, to) of it, in
   * MEASURED_PART pieces, each measured; the first that takes the pool past its capacity fails the
   * write and the rest is not written, so a refused write leaves at most one piece beyond it.
   */
  private async measured(length: number, part: (from: number, to: number) => Promise<void>): Promise<void> {
    for (let from = 0; from < length; from += MEASURED_PART) {
      const before = this.file.allocatedBytes();
      await part(from, Math.min(length, from + MEASURED_PART));
      this.space.settle(this.file.allocatedBytes() - before, this.uuid);
    }
  }
  flush(): Promise<void> {
    return this.file.flush().catch(this.errors.seen);
  }
  trim(offset: number, length: number): Promise<void> {
    return this.writing(() => this.file.trim(offset, length));
  }
  writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    return this.writing(() =>
      this.fits(length)
        ? this.file.writeZeroes(offset, length, fua)
        : this.measured(length, (from, to) => this.file.writeZeroes(offset + from, to - from, fua)),
    );
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
