import type { ClusterState } from '../catalog/cluster.js';
import type { CoreEvent } from '../catalog/events.js';
import { labelsText, volumeStatus } from '../catalog/views/volumes.js';
import { humanizeBytes } from '../output/humanize.js';
import type { Volume } from '../rest/types.js';
import {
  childUri,
  frontendNodes,
  operationName,
  replicaPoolName,
  specStatusName,
  switchOverStageName,
  type VolumeSpec,
} from '../specs/index.js';
import { eventsSection, type Page } from './page.js';

export const VOLUME_PAGE_TYPES = [
  'VolumeSpec',
  'ReplicaSpec',
  'PoolSpec',
  'NexusSpec',
  'NexusInfo',
  'VolumeSnapshot',
  'SwitchOver',
  'NodeLiveness',
] as const;

/**
 * Everything about one volume: its spec, its target (with the URI from core), every replica with
 * its node, pool and health (and rebuild % while rebuilding), the last NexusInfo, snapshots,
 * switchovers and the recent events of the volume, its replicas and its nexuses (those it had too).
 */
export function volumePage(
  state: ClusterState,
  v: VolumeSpec,
  events: CoreEvent[],
  live: Volume | null,
): Page {
  const replicas = [...(state.specs.ReplicaSpec?.values() ?? [])].filter((r) => r.owners.volume === v.uuid);
  const nexuses = [...(state.specs.NexusSpec?.values() ?? [])].filter((n) => n.owner === v.uuid);
  const target = v.target?.active ? v.target : null;
  const nexus = target ? state.specs.NexusSpec?.get(target.nexus) : undefined;
  const topology = live?.state.replica_topology ?? {};
  const info = (state.nexusInfo.get(v.uuid) ?? []).find(
    (i) => i.nexusId === (v.last_nexus_id ?? target?.nexus),
  );
  const snapshots = [...(state.specs.VolumeSnapshot?.values() ?? [])].filter(
    (s) => s.spec.source_id === v.uuid,
  );
  const switchover = state.specs.SwitchOver?.get(v.uuid);
  const ids = new Set([
    v.uuid,
    ...replicas.map((r) => r.uuid),
    ...nexuses.map((n) => n.uuid),
    ...snapshots.map((s) => s.spec.uuid),
  ]);
  return {
    fields: [
      ['Name', v.uuid],
      [
        'Status',
        live
          ? `${live.state.status} (core)`
          : `${volumeStatus(state, v)} (stored specs only: core not reachable)`,
      ],
      ['Spec', specStatusName(v.status)],
      ['Size', `${humanizeBytes(v.size)}${v.thin ? ', thin' : ''}`],
      ['Replicas', v.num_replicas],
      ['Self-heal', v.policy.self_heal],
      ['Labels', labelsText(v.labels)],
      ['Max snapshots', v.max_snapshots],
      ['Restored from', v.content_source ? `snapshot ${v.content_source.Snapshot[0]}` : null],
      [
        'Operation',
        v.operation ? `${operationName(v.operation.operation)} (result ${v.operation.result})` : null,
      ],
    ],
    sections: [
      {
        title: 'Target',
        fields: target
          ? [
              ['Node', target.node],
              ['Nexus', target.nexus],
              ['Protocol', target.protocol],
              ['URI', live?.state.target?.deviceUri],
              ...(live?.state.target?.shutdown_reason
                ? [['Shut down', live.state.target.shutdown_reason] as [string, string]]
                : []),
              ['Frontend', frontendNodes(v).join(', ')],
              ['Reservation key', String(target.config.reservationKey)],
              ['Children', nexus?.children.map(childUri).join(', ')],
            ]
          : [['Published', false]],
      },
      {
        title: 'Replicas',
        table: {
          headers: ['UUID', 'NODE', 'POOL', 'SPEC', 'STATE', 'CHILD', 'REBUILD'],
          rows: replicas.map((r) => {
            const t = topology[r.uuid];
            const pool = replicaPoolName(r);
            return [
              r.uuid,
              state.specs.PoolSpec?.get(pool)?.node,
              pool,
              specStatusName(r.status),
              t?.state,
              t?.['child-status'],
              t?.['rebuild-progress'] === undefined ? null : `${t['rebuild-progress']}%`,
            ];
          }),
        },
      },
      {
        title: 'Last nexus info',
        fields: info
          ? [
              ['Nexus', info.nexusId],
              ['Clean shutdown', info.info.clean_shutdown],
              [
                'Healthy',
                info.info.children
                  .filter((c) => c.healthy)
                  .map((c) => c.uuid)
                  .join(', '),
              ],
            ]
          : [['Recorded', false]],
      },
      {
        title: 'Snapshots',
        table: {
          headers: ['UUID', 'STATUS', 'CREATED', 'SIZE'],
          rows: snapshots.map((s) => [
            s.spec.uuid,
            specStatusName(s.status),
            s.metadata.timestamp,
            humanizeBytes(s.metadata.size),
          ]),
        },
      },
      {
        title: 'Switchover',
        fields: switchover
          ? [
              ['Stage', switchOverStageName(switchover)],
              ['Node', switchover.node_name],
              ['Since', switchover.timestamp],
            ]
          : [['In progress', false]],
      },
      // A replica or nexus gone since (replaced, say) is still part of the volume's story: its
      // events name the volume.
      eventsSection(
        events.filter(
          (e) =>
            ids.has(e.id) ||
            ((e.resource === 'replica' || e.resource === 'nexus') && e.message.includes(v.uuid)),
        ),
      ),
    ],
  };
}
