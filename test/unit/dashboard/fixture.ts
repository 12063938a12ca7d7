import {
  nexusInfo,
  nodeSpec,
  poolSpec,
  replicaSpec,
  type SwitchOverStage,
  switchOver,
  type VolumeSpec,
  volumeSpec,
} from '../../../src/lib/specs/index.js';
import { eventsPrefix, nexusInfoKey, nodeLivenessKey, objectKey } from '../../../src/lib/store/keys.js';
import type { Store } from '../../../src/lib/store/types.js';

/** A small cluster written with the spec codecs, as core and the io-engines write it. */
export const space = { clusterId: 'dash-cluster', namespace: 'default' };

export const GiB = 1024 ** 3;

/** A volume uuid whose first group is `n` in hex (sorts by n). */
export const volumeId = (n: number) => `${n.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`;
const replicaId = (n: number, i: number) =>
  `${n.toString(16).padStart(8, '0')}-000${i}-4000-8000-000000000001`;
const nexusId = (n: number) => `${n.toString(16).padStart(8, '0')}-0000-4000-8000-000000000002`;

export function nodeRecord(id: string, cordoned = false): [string, string] {
  return [
    objectKey(space, 'NodeSpec', id),
    nodeSpec.encode({
      id,
      endpoint: `127.0.0.1:${10124 + Number(id.replace(/\D/g, '') || 0)}`,
      labels: {},
      draining_volumes: [],
      ...(cordoned ? { cordon_drain_state: { Cordoned: { cordonlabels: ['maintenance'] } } } : {}),
    }),
  ];
}

export function livenessRecord(id: string): [string, string] {
  return [nodeLivenessKey(space, id), JSON.stringify({ node: id, grpcEndpoint: '127.0.0.1:10124' })];
}

export function poolRecord(id: string, node: string): [string, string] {
  return [
    objectKey(space, 'PoolSpec', id),
    poolSpec.encode({
      node,
      id,
      disks: [`aio:///var/lib/storctl/${id}`],
      status: { Created: 'Online' },
      labels: null,
      operation: null,
    }),
  ];
}

/**
 * Volume `n` with `replicas` replicas on `pool`; published on `node` when given, its NexusInfo
 * recording `healthy` healthy children.
 */
export function volumeRecords(
  n: number,
  o: { replicas?: number; pool?: string; node?: string; healthy?: number } = {},
): [string, string][] {
  const id = volumeId(n);
  const replicas = o.replicas ?? 1;
  const out: [string, string][] = [];
  const v: VolumeSpec = {
    uuid: id,
    size: GiB,
    labels: null,
    num_replicas: replicas,
    status: { Created: 'Online' },
    policy: { self_heal: true },
    topology: null,
    last_nexus_id: o.node ? nexusId(n) : null,
    operation: null,
    thin: false,
    target: o.node
      ? {
          node: o.node,
          nexus: nexusId(n),
          protocol: 'nbd',
          active: true,
          config: {
            controllerIdRange: { start: 1, end: 2 },
            reservationKey: 1n,
            reservationType: 'ExclusiveAccess',
            preemptPolicy: 'Holder',
          },
          frontend: { host_acl: [] },
        }
      : null,
    publish_context: null,
    affinity_group: null,
  };
  out.push([objectKey(space, 'VolumeSpec', id), volumeSpec.encode(v)]);
  for (let i = 0; i < replicas; i++)
    out.push([
      objectKey(space, 'ReplicaSpec', replicaId(n, i)),
      replicaSpec.encode({
        name: replicaId(n, i),
        uuid: replicaId(n, i),
        size: GiB,
        pool: o.pool ?? 'pool-1',
        share: 'nbd',
        thin: false,
        status: { Created: 'online' },
        managed: true,
        owners: { volume: id, disown_all: false },
        operation: null,
        allowed_hosts: [],
      }),
    ]);
  if (o.node)
    out.push([
      nexusInfoKey(space, nexusId(n), id),
      nexusInfo.encode({
        clean_shutdown: false,
        children: Array.from({ length: replicas }, (_, i) => ({
          uuid: replicaId(n, i),
          healthy: i < (o.healthy ?? replicas),
        })),
      }),
    ]);
  return out;
}

export function switchOverRecord(n: number, stage: SwitchOverStage, node = 'node-1'): [string, string] {
  return [
    objectKey(space, 'SwitchOver', volumeId(n)),
    switchOver.encode({
      callback_uri: '127.0.0.1:50053',
      node_name: node,
      volume: volumeId(n),
      operation: { operation: stage, result: null },
      timestamp: '2026-11-01T10:00:00Z',
      existing_nqn: `nqn.2019-05.io.openebs:${volumeId(n)}`,
      new_path: null,
      retry_count: 1,
      reuse_existing: true,
      publish_context: null,
    }),
  ];
}

let eventSeq = 0;
export function eventRecord(action: string, id: string, message: string): [string, string] {
  const time = new Date(Date.UTC(2026, 10, 1, 10, 0, eventSeq++)).toISOString();
  return [
    `${eventsPrefix(space)}${time}-${String(eventSeq).padStart(6, '0')}`,
    JSON.stringify({ time, resource: 'volume', id, action, message }),
  ];
}

/** The small cluster: node-1 online, node-2 cordoned, node-3 online; 3 volumes; a switchover. */
export function smallCluster(): [string, string][] {
  return [
    nodeRecord('node-1'),
    nodeRecord('node-2', true),
    nodeRecord('node-3'),
    livenessRecord('node-1'),
    livenessRecord('node-2'),
    livenessRecord('node-3'),
    poolRecord('pool-1', 'node-1'),
    poolRecord('pool-2', 'node-2'),
    ...volumeRecords(1, { replicas: 2, node: 'node-1', healthy: 2 }),
    ...volumeRecords(2, { replicas: 2, node: 'node-3', healthy: 1, pool: 'pool-2' }),
    ...volumeRecords(3),
    switchOverRecord(1, 'ReplacePath'),
    eventRecord('created', volumeId(1), 'volume created'),
    eventRecord('published', volumeId(1), 'published on node-1'),
  ];
}

/** Write records in transactions of `batch` puts. */
export async function seed(store: Store, records: [string, string][], batch = 500): Promise<void> {
  for (let i = 0; i < records.length; i += batch)
    await store.txn({
      compare: [],
      success: records.slice(i, i + batch).map(([key, value]) => ({ type: 'put' as const, key, value })),
    });
}
