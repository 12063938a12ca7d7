import { status } from '@grpc/grpc-js';
import { GrpcError } from '../../lib/grpc/status.js';

/**
 * Mayastor's VolumeOpGuard: one CSI operation at a time per volume (and per snapshot). A second
 * call while one is in flight answers ABORTED at once, as the spec asks ("operation pending for
 * this volume"); the CO retries it later.
 */
export class OpGuard {
  private readonly busy = new Set<string>();

  async run<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    const taken = keys.find((k) => this.busy.has(k));
    if (taken) {
      const [kind, id] = taken.split(':');
      throw new GrpcError(status.ABORTED, `an operation on ${kind} ${id} is already in progress; retry`);
    }
    for (const k of keys) this.busy.add(k);
    try {
      return await fn();
    } finally {
      for (const k of keys) this.busy.delete(k);
    }
  }

  get size(): number {
    return this.busy.size;
  }
}

export const volumeKey = (id: string) => `volume:${id}`;
export const snapshotKey = (id: string) => `snapshot:${id}`;
