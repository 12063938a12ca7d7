import type { ClusterState } from '../catalog/cluster.js';
import type { CoreEvent } from '../catalog/events.js';
import type { LiveState } from '../catalog/live.js';
import { labelsText } from '../catalog/views/volumes.js';
import { humanizeBytes } from '../output/humanize.js';
import {
  cordonLabels,
  drainLabels,
  drainStateText,
  type NodeSpec,
  nodeStatusText,
  replicaPoolName,
} from '../specs/index.js';
import { eventsSection, type Page } from './page.js';

export const NODE_PAGE_TYPES = ['NodeSpec', 'PoolSpec', 'ReplicaSpec', 'VolumeSpec', 'NodeLiveness'] as const;

/** The volumes whose active target is on the node. */
export const nodeTargets = (state: ClusterState, node: string) =>
  [...(state.specs.VolumeSpec?.values() ?? [])].filter((v) => v.target?.active && v.target.node === node);

/** Everything about one node: liveness, cordons and drain, its pools, the targets it serves, events. */
export function nodePage(
  state: ClusterState,
  n: NodeSpec,
  events: CoreEvent[],
  live: LiveState | null,
): Page {
  const alive = state.liveness.get(n.id);
  const pools = [...(state.specs.PoolSpec?.values() ?? [])].filter((p) => p.node === n.id);
  const poolIds = new Set(pools.map((p) => p.id));
  const replicas = [...(state.specs.ReplicaSpec?.values() ?? [])].filter((r) =>
    poolIds.has(replicaPoolName(r)),
  );
  const targets = nodeTargets(state, n.id);
  return {
    fields: [
      ['Name', n.id],
      ['Status', nodeStatusText(n, alive ? 'Online' : 'Offline')],
      ['gRPC endpoint', n.endpoint],
      ['NBD endpoint', alive?.nbdEndpoint],
      ['Version', n.version ?? alive?.version],
      ['Labels', labelsText(n.labels)],
      ['Cordon labels', cordonLabels(n).join(', ')],
      ['Drain', drainStateText(n)],
      ['Drain labels', drainLabels(n).join(', ')],
      ['Draining volumes', n.draining_volumes.join(', ')],
      ['Replicas', replicas.length],
    ],
    sections: [
      {
        title: 'Pools',
        table: {
          headers: ['ID', 'DISK', 'CAPACITY', 'ALLOCATED'],
          rows: pools.map((p) => {
            const l = live?.pools.get(p.id)?.state;
            return [p.id, p.disks.join(', '), l && humanizeBytes(l.capacity), l && humanizeBytes(l.used)];
          }),
        },
      },
      {
        title: 'Targets',
        table: {
          headers: ['VOLUME', 'NEXUS', 'STATUS', 'URI'],
          rows: targets.map((v) => {
            const l = live?.volumes.get(v.uuid);
            return [v.uuid, v.target?.nexus, l?.state.status, l?.state.target?.deviceUri];
          }),
        },
      },
      eventsSection(events.filter((e) => e.id === n.id || poolIds.has(e.id))),
    ],
  };
}
