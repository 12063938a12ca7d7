import type { Logger } from '../../lib/logger.js';
import { type NexusInfo, nexusInfo } from '../../lib/specs/index.js';
import type { Store } from '../../lib/store/types.js';

export type { NexusInfo };

/**
 * Writes one nexus's NexusInfo, one write at a time and in order, retrying like the io-engine does
 * (docs/mayastor-compat.md §3.6). Resolves only once the record is stored, so callers can hold I/O until then.
 */
export class NexusInfoWriter {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: Store | null,
    readonly key: string,
    private readonly log: Logger,
    private readonly retries = 10,
    private readonly retryDelayMs = 200,
  ) {}

  write(info: NexusInfo): Promise<void> {
    const next = this.chain.then(() => this.put(info));
    this.chain = next.catch(() => {});
    return next;
  }

  private async put(info: NexusInfo): Promise<void> {
    if (!this.store) return;
    const value = nexusInfo.encode(info);
    for (let attempt = 0; ; attempt++) {
      try {
        if (await this.putUnlessFenced(this.store, value)) return;
        attempt--; // lost a race with another writer (core's fence): look again, not a failure
      } catch (err) {
        if (err instanceof NexusFencedError) throw err;
        if (attempt >= this.retries)
          throw new Error(`cannot persist NexusInfo ${this.key}: ${(err as Error).message}`);
        this.log.warn(
          { key: this.key, err: (err as Error).message, attempt },
          'NexusInfo write failed, retrying',
        );
        await new Promise((r) => setTimeout(r, this.retryDelayMs));
      }
    }
  }

  /**
   * Write `value` unless the stored record is fenced (compare-and-swap on its mod revision, so a
   * fence written between the read and the write is never overwritten). False: lost a race, retry.
   */
  private async putUnlessFenced(store: Store, value: string): Promise<boolean> {
    const current = await store.get(this.key);
    if (current && nexusInfo.decode(this.key, current.value).do_self_shutdown)
      throw new NexusFencedError(this.key);
    const { succeeded } = await store.txn({
      compare: [{ key: this.key, target: 'mod', op: '==', value: current?.modRevision ?? 0 }],
      success: [{ type: 'put', key: this.key, value }],
    });
    return succeeded;
  }

  /** Whether core fenced this nexus (its NexusInfo has do_self_shutdown). */
  async isFenced(): Promise<boolean> {
    if (!this.store) return false;
    const current = await this.store.get(this.key);
    return !!current && !!nexusInfo.decode(this.key, current.value).do_self_shutdown;
  }
}

/**
 * The nexus's target was moved away by a switchover (core set `do_self_shutdown` in its NexusInfo):
 * it must shut down rather than record anything or serve again.
 */
export class NexusFencedError extends Error {
  constructor(key: string) {
    super(
      `the volume's target was moved to another nexus (${key} has do_self_shutdown); this nexus is fenced`,
    );
    this.name = 'NexusFencedError';
  }
}

/** Find the NexusInfo for a nexus: its own key, else the newest one of the same volume. */
export async function readNexusInfo(
  store: Store | null,
  key: string,
  volumePrefix: string | null,
): Promise<{ key: string; info: NexusInfo } | null> {
  if (!store) return null;
  // An undecodable record throws (DecodeError naming key and field): guessing which children are
  // up to date could serve stale data.
  const own = await store.get(key);
  if (own) return { key, info: nexusInfo.decode(key, own.value) };
  if (!volumePrefix) return null;
  const { kvs } = await store.range(volumePrefix);
  const newest = kvs
    .filter((kv) => kv.key.endsWith('/info'))
    .sort((a, b) => b.modRevision - a.modRevision)[0];
  return newest ? { key: newest.key, info: nexusInfo.decode(newest.key, newest.value) } : null;
}
