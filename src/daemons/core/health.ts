import { type NexusSpec, poolRefName, type ReplicaSpec, type VolumeSpec } from '../../lib/specs/index.js';
import type { NexusState, PoolState } from './engine-api.js';
import type { Registry } from './registry.js';

/**
 * Health of volumes, replicas and nexuses from the stored specs and the state polled from the
 * io-engines: what REST shows, what the status events report and what the operations decide on.
 */

/** The nexus's state as last polled from its io-engine. */
export function nexusStateOf(reg: Registry, n: NexusSpec | undefined): NexusState | undefined {
  return n ? reg.nexusStates.get(n.node)?.get(n.uuid) : undefined;
}

/** Volume health from its nexus (published) or its replicas (unpublished). */
export function volumeStatus(reg: Registry, v: VolumeSpec): string {
  if (v.target && v.target.active !== false) {
    const st = nexusStateOf(reg, reg.nexuses.get(v.target.nexus));
    if (!st) return 'Unknown';
    if (st.state === 'Faulted' || st.state === 'Shutdown') return st.state;
    const healthy = st.children.filter((c) => c.state === 'Online').length;
    if (healthy === 0) return 'Faulted';
    if (st.state === 'Degraded' || healthy < v.num_replicas || st.children.length > healthy)
      return 'Degraded';
    return 'Online';
  }
  const replicas = reg.volumeReplicas(v.uuid);
  if (replicas.some((r) => awaitingImport(reg, r))) return 'Unknown';
  const live = replicas.filter((r) => replicaOnline(reg, r));
  if (live.length === 0) return replicas.length ? 'Faulted' : 'Unknown';
  return live.length < v.num_replicas ? 'Degraded' : 'Online';
}

/** Online: its node is, and its io-engine reported it at the last poll (or was not polled yet). */
export function replicaOnline(reg: Registry, r: ReplicaSpec): boolean {
  const node = reg.replicaNode(r);
  if (!node || !reg.isOnline(node)) return false;
  const states = reg.replicaStates.get(node);
  return !states || states.has(r.uuid);
}

/**
 * May serve I/O now: online, or core does not know yet (its pool is still being re-imported after a
 * restart). Not a replica whose pool failed to import or that its io-engine no longer lists: a nexus
 * built over it fails, and a target that insists on it leaves the volume without one.
 */
export const replicaMayServe = (reg: Registry, r: ReplicaSpec): boolean =>
  replicaOnline(reg, r) || awaitingImport(reg, r);

/**
 * Its pool's io-engine answers but has not reported the pool since it restarted, and the pool
 * reconciler has not re-imported it yet (nor failed to): core does not know yet whether the replica
 * is there. Without this, every unpublished volume read Faulted for the first seconds after a
 * restart of `storctl up`, and core recorded that as an event.
 */
function awaitingImport(reg: Registry, r: ReplicaSpec): boolean {
  const pool = reg.pools.get(poolRefName(r.pool));
  const polled = pool && reg.polledPools.get(pool.node);
  return (
    !!polled &&
    reg.isOnline(pool.node) &&
    !polled.has(pool.id) &&
    pool.status !== 'Deleting' &&
    !reg.poolImportFailed.has(pool.id)
  );
}

/**
 * A pool with less free space than this is full: thin writes there that need new space fail with
 * ENOSPC (io-engine pool-space.ts), and a child faulted there is not added back until it has room.
 */
const FULL_POOL_FREE_BYTES = 4 * 1024 * 1024;

export const poolFull = (st: PoolState) => st.free < FULL_POOL_FREE_BYTES;
