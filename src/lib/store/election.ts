import { ConflictError, UsageError } from '../errors.js';
import type { KeyValue, Lease, Store, Watch } from './types.js';

/**
 * Leader election / blocking lock on any Store, etcd's client recipe: each contender creates
 * `<name>/<leaseIdHex>` attached to its own lease; the holder is the key with the lowest create
 * revision; a waiter watches only its predecessor's deletion (no thundering herd). A dead holder's
 * key goes with its lease, so a waiter takes over within the TTL even after kill -9.
 */

export interface Leadership {
  /** The contender key, `<name>/<leaseIdHex>`. */
  key: string;
  /** The lease the key is bound to; guard writes with `{ target: 'lease', key, value: lease.id }`. */
  lease: Lease;
  /** Aborted when leadership ends: lease lost, key deleted, or resigned. */
  lost: AbortSignal;
  /** Give up leadership: revokes the lease, which deletes the key and wakes the next contender. */
  resign(): Promise<void>;
}

export interface CampaignOptions {
  ttlSeconds: number;
  /** Abort to stop waiting; the contender key is withdrawn. */
  signal?: AbortSignal;
}

export interface Leader {
  key: string;
  value: string;
  lease: string;
}

function electionPrefix(name: string): string {
  if (typeof name !== 'string' || name === '' || name.endsWith('/')) {
    throw new UsageError(`election name must be non-empty and not end with '/', got ${JSON.stringify(name)}`);
  }
  return `${name}/`;
}

/** Contender keys are `<prefix><leaseHex>`; keys of a nested election (`<name>/x/…`) are not ours. */
async function contenders(store: Store, prefix: string): Promise<{ kvs: KeyValue[]; revision: number }> {
  const { kvs, revision } = await store.range(prefix);
  return { kvs: kvs.filter((kv) => !kv.key.slice(prefix.length).includes('/')), revision };
}

function holderOf(kvs: KeyValue[]): KeyValue | undefined {
  return kvs.reduce<KeyValue | undefined>(
    (a, b) => (a === undefined || b.createRevision < a.createRevision ? b : a),
    undefined,
  );
}

/** Who holds the election now, or null. */
export async function currentLeader(store: Store, name: string): Promise<Leader | null> {
  const { kvs } = await contenders(store, electionPrefix(name));
  const holder = holderOf(kvs);
  return holder ? { key: holder.key, value: holder.value, lease: holder.lease } : null;
}

/** Resolves once elected; rejects when `signal` aborts or the lease is lost while waiting. */
export async function campaign(
  store: Store,
  name: string,
  value: string,
  options: CampaignOptions,
): Promise<Leadership> {
  const prefix = electionPrefix(name);
  options.signal?.throwIfAborted();
  const lease = await store.grantLease(options.ttlSeconds);
  const key = `${prefix}${lease.id}`;
  try {
    await store.txn({
      compare: [{ key, target: 'create', op: '==', value: 0 }],
      success: [{ type: 'put', key, value, lease: lease.id }],
    });
    await waitUntilFirst(store, prefix, key, lease, options.signal);
  } catch (err) {
    await lease.revoke().catch(() => undefined);
    throw err;
  }
  return holdLeadership(store, prefix, key, lease);
}

async function waitUntilFirst(
  store: Store,
  prefix: string,
  key: string,
  lease: Lease,
  signal?: AbortSignal,
): Promise<void> {
  for (;;) {
    signal?.throwIfAborted();
    lease.lost.throwIfAborted();
    const { kvs, revision } = await contenders(store, prefix);
    const mine = kvs.find((kv) => kv.key === key);
    if (!mine) throw new ConflictError('ELECTION_KEY_LOST', `election key ${key} disappeared while waiting`);
    const predecessor = kvs
      .filter((kv) => kv.createRevision < mine.createRevision)
      .reduce<KeyValue | undefined>(
        (a, b) => (a === undefined || b.createRevision > a.createRevision ? b : a),
        undefined,
      );
    if (!predecessor) return;
    await waitForDeletion(store, prefix, predecessor.key, revision + 1, [signal, lease.lost]);
  }
}

/** Resolves when `key` is deleted after `fromRevision` (or history was compacted: re-check). */
async function waitForDeletion(
  store: Store,
  prefix: string,
  key: string,
  fromRevision: number,
  signals: (AbortSignal | undefined)[],
): Promise<void> {
  const watch = await store.watch(prefix, { fromRevision });
  const detach: (() => void)[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      for (const s of signals) {
        if (!s) continue;
        if (s.aborted) return reject(s.reason);
        const onAbort = () => reject(s.reason);
        s.addEventListener('abort', onAbort, { once: true });
        detach.push(() => s.removeEventListener('abort', onAbort));
      }
      watch.on('event', (e) => {
        if (e.type === 'delete' && e.key === key) resolve();
      });
      watch.on('compacted', () => resolve());
      watch.on('error', () => undefined); // the watch reconnects by itself
    });
  } finally {
    for (const d of detach) d();
    await watch.close();
  }
}

async function holdLeadership(store: Store, prefix: string, key: string, lease: Lease): Promise<Leadership> {
  const lost = new AbortController();
  let watch: Watch | undefined;
  const end = (reason: unknown) => {
    if (!lost.signal.aborted) lost.abort(reason);
    void watch?.close();
  };
  lease.lost.addEventListener('abort', () => end(lease.lost.reason), { once: true });
  try {
    watch = await store.watch(prefix);
    watch.on('event', (e) => {
      if (e.type === 'delete' && e.key === key) {
        end(new ConflictError('LEADERSHIP_LOST', `election key ${key} was deleted`));
      }
    });
    watch.on('error', () => undefined);
    // Deleted between election and the watch start?
    if (!(await store.get(key))) end(new ConflictError('LEADERSHIP_LOST', `election key ${key} was deleted`));
  } catch (err) {
    end(err);
  }
  if (lost.signal.aborted) void watch?.close();
  return {
    key,
    lease,
    lost: lost.signal,
    resign: async () => {
      end(new ConflictError('LEADERSHIP_RESIGNED', `resigned leadership ${key}`));
      await lease.revoke();
    },
  };
}
