import type { ClusterState } from '../catalog/cluster.js';
import type { CoreEvent } from '../catalog/events.js';
import type { LiveState } from '../catalog/live.js';
import { labelsText } from '../catalog/views/volumes.js';
import { humanizeBytes } from '../output/humanize.js';
import { type PoolSpec, replicaPoolName, specStatusName } from '../specs/index.js';
import { eventsSection, type Page } from './page.js';

export const POOL_PAGE_TYPES = ['PoolSpec', 'ReplicaSpec', 'NodeLiveness'] as const;

/** Everything about one pool: its node and disk, capacity and usage (from core), its replicas, events. */
export function poolPage(
  state: ClusterState,
  p: PoolSpec,
  events: CoreEvent[],
  live: LiveState | null,
): Page {
  const replicas = [...(state.specs.ReplicaSpec?.values() ?? [])].filter((r) => replicaPoolName(r) === p.id);
  const usage = live?.pools.get(p.id)?.state;
  const committed = replicas.reduce((sum, r) => sum + r.size, 0);
  return {
    fields: [
      ['Name', p.id],
      ['Node', `${p.node} (${state.liveness.has(p.node) ? 'Online' : 'Offline'})`],
      ['Disks', p.disks.join(', ')],
      ['Status', specStatusName(p.status)],
      ['Labels', labelsText(p.labels)],
      ['Capacity', usage ? humanizeBytes(usage.capacity) : null],
      ['Allocated', usage ? humanizeBytes(usage.used) : null],
      ['Available', usage ? humanizeBytes(usage.capacity - usage.used) : null],
      ['Committed', humanizeBytes(committed)],
    ],
    sections: [
      {
        title: 'Replicas',
        table: {
          headers: ['UUID', 'VOLUME', 'SIZE', 'THIN', 'STATUS'],
          rows: replicas.map((r) => [
            r.uuid,
            r.owners.volume,
            humanizeBytes(r.size),
            String(r.thin),
            specStatusName(r.status),
          ]),
        },
      },
      eventsSection(events.filter((e) => e.id === p.id)),
    ],
  };
}
