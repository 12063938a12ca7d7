import { hostname } from 'node:os';
import { storeLeaseOwner } from './specs/index.js';
import { type KeySpace, typePrefix } from './store/keys.js';
import type { Store } from './store/types.js';

/**
 * Where core's single-writer lease lives in the store (docs/mayastor-compat.md §4.4): one lock key
 * per contender under `StoreLeaseLock/CoreAgent/<lease>`, and `StoreLeaseOwner/CoreAgent` naming
 * the instance that holds it.
 */
export const CORE_SERVICE_KIND = 'CoreAgent';

export const coreLockPrefix = (space: KeySpace) =>
  `${typePrefix(space, 'StoreLeaseLock')}${CORE_SERVICE_KIND}/`;
export const coreOwnerKey = (space: KeySpace) =>
  `${typePrefix(space, 'StoreLeaseOwner')}${CORE_SERVICE_KIND}`;

/** The instance name a core records as the lease owner unless given one: this host and its PID. */
export const defaultCoreInstanceName = (pid: number) => `${hostname()}-${pid}`;

/**
 * Revoke the store lease of a core that has exited, so the core started in its place takes over at
 * once instead of waiting out the TTL. Only when the owner record names that instance and its lock
 * key still holds that lease: a lease another core has taken meanwhile is left alone. Safe because
 * the process is gone: every write core makes is guarded on its lock key, so a write of the dead
 * core still in flight to the store fails once the lease is revoked. Answers the lease revoked, or
 * null when there was none of that instance's to revoke.
 */
export async function releaseExitedCoreLease(
  store: Store,
  space: KeySpace,
  instanceName: string,
): Promise<string | null> {
  const ownerKey = coreOwnerKey(space);
  const kv = await store.get(ownerKey);
  if (!kv) return null;
  const owner = storeLeaseOwner.decode(ownerKey, kv.value);
  if (owner.instance_name !== instanceName) return null;
  const lock = await store.get(`${coreLockPrefix(space)}${owner.lease_id}`);
  if (lock?.lease !== owner.lease_id) return null;
  await store.revokeLease(owner.lease_id);
  return owner.lease_id;
}
