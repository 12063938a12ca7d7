import { type BlockBackend, BlockIoError } from '../../lib/nbd/backend.js';
import { Errno } from '../../lib/nbd/protocol.js';
import type { Replica } from './replica.js';

/**
 * A replica as one nexus sees it: NVMe's Exclusive Access reservation, preempted by the newest
 * holder. A nexus opening the replica (locally or over NBD as `<replica>@<nexus>`) takes the
 * reservation; every later I/O of an older holder fails with EPERM. When a switchover builds a new
 * target on the replicas, the old nexus — if it was only stalled — cannot write to them any more,
 * so two targets never accept writes for one volume.
 */
export class ReservedReplica implements BlockBackend {
  constructor(
    private readonly replica: Replica,
    readonly holder: string,
  ) {
    replica.holder = holder;
  }

  get size(): number {
    return this.replica.size;
  }

  private check(): void {
    if (this.replica.holder !== this.holder)
      throw new ReservationConflict(this.replica.uuid, this.replica.holder);
  }

  async read(buf: Buffer, offset: number): Promise<void> {
    this.check();
    return this.replica.read(buf, offset);
  }
  async write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    this.check();
    return this.replica.write(buf, offset, fua);
  }
  async flush(): Promise<void> {
    this.check();
    return this.replica.flush();
  }
  async trim(offset: number, length: number): Promise<void> {
    this.check();
    return this.replica.trim(offset, length);
  }
  async writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    this.check();
    return this.replica.writeZeroes(offset, length, fua);
  }
}

export class ReservationConflict extends BlockIoError {
  constructor(replica: string, holder: string | null) {
    super(`reservation conflict: replica ${replica} is held by nexus ${holder ?? '(none)'}`, Errno.EPERM);
  }
}

/** Whether a child's I/O error is a reservation conflict (local, or EPERM from a remote replica). */
export function isReservationConflict(err: unknown): boolean {
  return err instanceof BlockIoError && err.errno === Errno.EPERM;
}
