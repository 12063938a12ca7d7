import { randomUUID } from 'node:crypto';
import type { Logger } from '../../lib/logger.js';
import { invalid, notFound } from './errors.js';
import type { Nexus } from './nexus.js';

/** Longest I/O hold a caller may ask for: a volume's I/O never waits longer on one that vanished. */
export const MAX_HOLD_MS = 120_000;

interface Hold {
  nexus: string;
  release: () => void;
  timer: NodeJS.Timeout;
}

/**
 * I/O holds taken over gRPC (HoldNexusIo), so that core can snapshot every replica of a published
 * volume at the same point of its writes. Each ends by ReleaseNexusIo or by itself once its timeout
 * passes: a caller that dies while holding (core, mid-snapshot) stalls the volume's I/O that long.
 */
export class NexusIoHolds {
  private readonly holds = new Map<string, Hold>();

  constructor(private readonly log: Logger) {}

  /** Hold `nexus`'s I/O (its requests in flight finish first, within the timeout); the hold's id. */
  async hold(nexus: Nexus, timeoutMs: number): Promise<string> {
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_HOLD_MS)
      throw invalid(`hold timeout must be 1..${MAX_HOLD_MS} ms, not ${timeoutMs}`);
    const started = Date.now();
    const release = await nexus.holdIo(timeoutMs);
    const id = randomUUID();
    const timer = setTimeout(
      () => {
        if (!this.holds.delete(id)) return;
        release();
        this.log.warn({ nexus: nexus.uuid, hold: id, timeoutMs }, 'nexus I/O hold expired unreleased');
      },
      Math.max(0, timeoutMs - (Date.now() - started)),
    );
    timer.unref();
    this.holds.set(id, { nexus: nexus.uuid, release, timer });
    return id;
  }

  /** End a hold; NOT_FOUND when it already expired (what it protected may have seen writes). */
  release(nexus: string, id: string): void {
    const h = this.holds.get(id);
    if (!h || h.nexus !== nexus)
      throw notFound('I/O hold', id, `of nexus '${nexus}': it expired (its timeout passed) or was released`);
    this.holds.delete(id);
    clearTimeout(h.timer);
    h.release();
  }
}
