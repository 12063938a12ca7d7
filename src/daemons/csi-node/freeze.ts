import { status } from '@grpc/grpc-js';
import { GrpcError } from '../../lib/grpc/status.js';
import type { Logger } from '../../lib/logger.js';
import { freezeFs, thawFs } from './fs-ops.js';
import type { NodeState, StagedVolume } from './state.js';

/** Default self-thaw of a frozen filesystem when the freezer names no timeout. */
export const DEFAULT_FREEZE_TIMEOUT_MS = 60_000;

const notFound = (m: string) => new GrpcError(status.NOT_FOUND, m);
const failedPrecondition = (m: string) => new GrpcError(status.FAILED_PRECONDITION, m);

/**
 * fsfreeze of staged filesystems for snapshots. Every freeze carries a deadline, recorded in the
 * state file: when no Unfreeze comes by then, the node thaws the filesystem itself, after a restart
 * too, so a controller that dies between the two calls never leaves an application stalled.
 */
export class Freezer {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly state: NodeState,
    private readonly log: Logger,
  ) {}

  /** After a restart: re-arm the self-thaw of a volume recorded as frozen (at once when overdue). */
  rearm(v: StagedVolume): void {
    if (v.frozenUntil) this.arm(v.volumeId, v.frozenUntil - Date.now());
  }

  /** Before a volume is torn down: no timer, no frozen filesystem. */
  async release(v: StagedVolume): Promise<void> {
    this.clear(v.volumeId);
    if (v.frozenUntil && !v.block) await thawFs(v.stagingPath).catch(() => false);
  }

  async freeze(volumeId: string, timeoutMs: number): Promise<void> {
    const v = this.state.get(volumeId);
    if (!v?.staged) throw notFound(`volume ${volumeId} is not staged on this node`);
    if (v.block)
      throw failedPrecondition(`volume ${volumeId} is staged as a raw block device: no filesystem to freeze`);
    await freezeFs(v.stagingPath);
    v.frozenUntil = Date.now() + timeoutMs;
    await this.state.put(v);
    this.arm(volumeId, timeoutMs);
    this.log.info({ volumeId, timeoutMs }, 'frozen');
  }

  async unfreeze(volumeId: string): Promise<boolean> {
    const v = this.state.get(volumeId);
    if (!v?.staged) throw notFound(`volume ${volumeId} is not staged on this node`);
    if (v.block)
      throw failedPrecondition(`volume ${volumeId} is staged as a raw block device: nothing is frozen`);
    this.clear(volumeId);
    const was = await thawFs(v.stagingPath);
    if (v.frozenUntil) {
      delete v.frozenUntil;
      await this.state.put(v);
    }
    this.log.info({ volumeId, wasFrozen: was }, 'thawed');
    return was;
  }

  private arm(volumeId: string, inMs: number): void {
    this.clear(volumeId);
    const t = setTimeout(
      () => {
        this.timers.delete(volumeId);
        this.log.warn({ volumeId }, 'no Unfreeze within the freeze timeout: thawing by ourselves');
        void this.unfreeze(volumeId).catch((err) =>
          this.log.error({ volumeId, err: (err as Error).message }, 'self-thaw failed'),
        );
      },
      Math.max(0, inMs),
    );
    t.unref();
    this.timers.set(volumeId, t);
  }

  clear(volumeId: string): void {
    const t = this.timers.get(volumeId);
    if (t) clearTimeout(t);
    this.timers.delete(volumeId);
  }

  close(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}
