import { humanizeBytes } from '../../output/humanize.js';
import type { Listing } from '../../output/render.js';
import { poolSpecOut } from '../../rest/present.js';
import {
  createdState,
  type PoolSpec,
  poolDisks,
  replicaPoolName,
  specStatusName,
} from '../../specs/index.js';
import { type ClusterState, specsOf } from '../cluster.js';
import { labelsText } from './volumes.js';

export const POOL_TYPES = ['PoolSpec', 'ReplicaSpec', 'NodeLiveness'] as const;

interface PoolRow {
  spec: PoolSpec;
  status: string;
  committed: number;
}

/**
 * A pool's status: its spec's until it is created; then, when core answered (`core`), its
 * io-engine's, Unknown when core holds no state of it (not imported: its disk failed, say); else
 * the spec's, Unknown when its node's liveness key is gone (a pool lives on its node).
 */
export function poolStatus(
  spec: PoolSpec,
  nodeLive: boolean,
  core: { state?: { status: string } } | null | undefined,
): string {
  const created = createdState(spec.status);
  if (created === null) return specStatusName(spec.status);
  if (core) return core.state?.status ?? 'Unknown';
  return nodeLive ? created : 'Unknown';
}

/**
 * Pools as the store knows them. COMMITTED is the sum of the replica sizes the specs place on the
 * pool; capacity and usage are live io-engine state, joined from core when it answers (else `<none>`).
 */
export function poolListing(state: ClusterState, filter?: (p: PoolSpec) => boolean): Listing<PoolRow> {
  const committed = new Map<string, number>();
  for (const r of specsOf(state, 'ReplicaSpec')) {
    const pool = replicaPoolName(r);
    committed.set(pool, (committed.get(pool) ?? 0) + r.size);
  }
  const rows = specsOf(state, 'PoolSpec')
    .filter((p) => !filter || filter(p))
    .map((spec) => {
      const status = poolStatus(
        spec,
        state.liveness.has(spec.node),
        state.live && { state: state.live.pools.get(spec.id)?.state },
      );
      return { spec, status, committed: committed.get(spec.id) ?? 0 };
    });
  const live = (r: PoolRow) => state.live?.pools.get(r.spec.id)?.state;
  const size = (n: number | undefined) => (n === undefined ? null : humanizeBytes(n));
  return {
    rows,
    columns: [
      { header: 'ID', get: (r) => r.spec.id },
      { header: 'DISKS', get: (r) => poolDisks(r.spec).join(', ') },
      { header: 'MANAGED', get: () => 'true' },
      { header: 'NODE', get: (r) => r.spec.node },
      { header: 'STATUS', get: (r) => r.status },
      { header: 'CAPACITY', get: (r) => size(live(r)?.capacity) },
      { header: 'ALLOCATED', get: (r) => size(live(r)?.used) },
      // Never below 0: a full pool's thin writes may leave a piece beyond its capacity (pool-space.ts).
      { header: 'AVAILABLE', get: (r) => size(live(r) && Math.max(0, live(r)!.capacity - live(r)!.used)) },
      { header: 'COMMITTED', get: (r) => humanizeBytes(r.committed) },
      { header: 'LABELS', get: (r) => labelsText(r.spec.labels), wide: true },
    ],
    // REST's pool: core's own when it answers (with capacity and usage), else the stored spec.
    object: (r) => state.live?.pools.get(r.spec.id) ?? { id: r.spec.id, spec: poolSpecOut(r.spec) },
  };
}
