import { hasRecord, specsOf } from '../catalog/cluster.js';
import { replicaPoolName } from '../specs/index.js';
import type { StoreSnapshot } from './snapshot.js';
import type { Orphan } from './types.js';

/**
 * Managed replicas no volume owns: owners.volume unset, or naming a volume with no VolumeSpec. (An
 * unmanaged replica is an operator's, made through REST `/pools/{pool}/replicas/{id}`: never an
 * orphan.) Core's replica GC destroys these after `--replica-gc-grace`; this finds them now.
 */
export function findReplicaOrphans(snap: StoreSnapshot): Orphan[] {
  const pools = snap.cluster.specs.PoolSpec ?? new Map<string, never>();
  const out: Orphan[] = [];
  for (const r of specsOf(snap.cluster, 'ReplicaSpec')) {
    if (!r.managed) continue;
    const owner = r.owners.volume;
    if (owner && hasRecord(snap.cluster, 'VolumeSpec', owner)) continue;
    const pool = replicaPoolName(r);
    // A destroy that did not finish (its io-engine stalled or was down): core's GC retries it.
    const deleting = r.status === 'Deleting' ? ', being deleted (core retries the destroy)' : '';
    out.push({
      kind: 'replica',
      id: r.uuid,
      volume: owner,
      node: pools.get(pool)?.node ?? null,
      pool,
      reason: `${owner ? `managed replica owned by volume ${owner}, which does not exist` : 'managed replica with no owning volume'}${deleting}`,
      action: `DELETE /pools/${pool}/replicas/${r.uuid} through core`,
    });
  }
  return out;
}
