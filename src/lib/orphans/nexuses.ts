import { hasRecord, specsOf } from '../catalog/cluster.js';
import type { StoreSnapshot } from './snapshot.js';
import type { Orphan } from './types.js';

/**
 * Nexuses without a volume: a NexusSpec whose owner names a volume with no VolumeSpec, or a managed
 * nexus with no owner. (An unmanaged nexus with no owner is an operator's, made through REST
 * `/nodes/{node}/nexuses/{id}`: never an orphan.)
 */
export function findNexusOrphans(snap: StoreSnapshot): Orphan[] {
  const out: Orphan[] = [];
  for (const n of specsOf(snap.cluster, 'NexusSpec')) {
    const owner = n.owner;
    if (owner ? hasRecord(snap.cluster, 'VolumeSpec', owner) : !n.managed) continue;
    // A target moved away while its node did not answer (switchover, republish): core's GC destroys it.
    const deleting = n.spec_status === 'Deleting' ? ", being deleted (core's nexus GC destroys it)" : '';
    out.push({
      kind: 'nexus',
      id: n.uuid,
      volume: owner,
      node: n.node,
      pool: null,
      reason: `${owner ? `nexus owned by volume ${owner}, which does not exist` : 'managed nexus with no owning volume'}${deleting}`,
      action: `DELETE /nexuses/${n.uuid} through core`,
    });
  }
  return out;
}
