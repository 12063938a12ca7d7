import { CORE_SERVICE_KIND, coreLockPrefix, coreOwnerKey } from '../../lib/core-lease.js';
import type { Logger } from '../../lib/logger.js';
import { storeLeaseOwner } from '../../lib/specs/index.js';
import type { KeySpace } from '../../lib/store/keys.js';
import type { Lease, Store } from '../../lib/store/types.js';

/**
 * The single-writer lease (docs/mayastor-compat.md §4.4): grant a lease, queue on the lock
 * `StoreLeaseLock/CoreAgent` the way etcd's lock API does (one key per contender,
 * `<lock>/<lease-hex>`, lowest create revision owns it), then record StoreLeaseOwner. Every write
 * core makes is a transaction guarded on its lock key still carrying its lease, so a core that lost
 * the lease cannot write, and a second core blocks here until the first one's lease is gone.
 */
export interface LeaseLock {
  lease: Lease;
  lockKey: string;
  /** Aborted when the lease is lost (expired, revoked, or the lock key is gone). */
  lost: AbortSignal;
  release(): Promise<void>;
}

/** Who holds the lease and when it ends unless renewed, for the operator waiting on it. */
async function describeHolder(store: Store, space: KeySpace, lease: string | undefined) {
  const ownerKey = coreOwnerKey(space);
  const [kv, ttl] = await Promise.all([store.get(ownerKey), lease ? store.leaseTimeToLive(lease) : -1]);
  const owner = kv ? storeLeaseOwner.decode(ownerKey, kv.value) : undefined;
  return {
    holder: lease,
    instance: owner?.lease_id === lease ? owner?.instance_name : undefined,
    expiresInS: ttl,
  };
}

export async function acquireLeaseLock(
  store: Store,
  space: KeySpace,
  opts: { ttlSeconds: number; instanceName: string; log: Logger; signal?: AbortSignal },
): Promise<LeaseLock> {
  const lease = await store.grantLease(opts.ttlSeconds);
  const lockPrefix = coreLockPrefix(space);
  const lockKey = `${lockPrefix}${lease.id}`;
  await store.txn({
    compare: [{ key: lockKey, target: 'create', op: '==', value: 0 }],
    success: [{ type: 'put', key: lockKey, value: '', lease: lease.id }],
  });
  let announced = false;
  const pollMs = Math.max(50, Math.min(500, (opts.ttlSeconds * 1000) / 10));
  for (;;) {
    if (opts.signal?.aborted) {
      await lease.revoke().catch(() => {});
      throw new Error('aborted while waiting for the core lease');
    }
    if (lease.lost.aborted) throw new Error('lease lost while waiting for the core lock');
    const { kvs } = await store.range(lockPrefix);
    const mine = kvs.find((kv) => kv.key === lockKey);
    if (!mine) throw new Error('lock key vanished while waiting for the core lock');
    const holder = kvs.reduce((a, b) => (b.createRevision < a.createRevision ? b : a));
    if (holder.key === lockKey) break;
    if (!announced) {
      opts.log.info(
        await describeHolder(store, space, holder.lease),
        'another core holds the lease; waiting to take over',
      );
      announced = true;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  const ownerKey = coreOwnerKey(space);
  const owner = { kind: CORE_SERVICE_KIND, lease_id: lease.id, instance_name: opts.instanceName };
  const res = await store.txn({
    compare: [{ key: lockKey, target: 'lease', op: '==', value: lease.id }],
    success: [{ type: 'put', key: ownerKey, value: storeLeaseOwner.encode(owner) }],
  });
  if (!res.succeeded) throw new Error('lost the core lock before recording the lease owner');
  opts.log.info({ lease: lease.id }, 'holding the core lease (single writer)');
  return {
    lease,
    lockKey,
    lost: lease.lost,
    release: async () => {
      await lease.revoke().catch(() => {});
    },
  };
}
