import { clusterPrefix, nexusInfoKey, nodeLivenessKey, objectKey } from '../../../src/lib/store/keys.js';

/**
 * A small cluster in Mayastor's exact JSON (docs/mayastor-compat.md §1): two nodes (node-1 alive, node-2 cordoned
 * and dead), a pool on each, a published 2-replica volume whose target recorded one child unhealthy,
 * an unpublished thin volume with a snapshot, and a switchover in progress.
 */
export const space = { clusterId: 'e2e-cluster', namespace: 'default' };

export const ids = {
  vol1: '4e01a5bc-1111-4fb7-9d1a-5d2d8c9a0b11',
  vol2: '7a9c3e21-2222-4c1d-8e55-0f1e2d3c4b5a',
  rep1: '82779efa-3333-4a5b-9c8d-1e2f3a4b5c6d',
  rep2: '2d98fa96-4444-4b5c-8d9e-2f3a4b5c6d7e',
  rep3: '5f6a7b8c-5555-4c6d-9e0f-3a4b5c6d7e8f',
  nexus: '8f5d061c-6666-4d7e-8f90-4b5c6d7e8f90',
  snap: 'c1d2e3f4-7777-4e8f-9a0b-5c6d7e8f9a0b',
} as const;

const pool = (id: string, node: string) =>
  `{"node":"${node}","id":"${id}","disks":["aio:///var/lib/storctl/${id}"],"status":{"Created":"Online"},"labels":{"openebs.io/created-by":"operator-diskpool","zone":"${node === 'node-1' ? 'a' : 'b'}"},"operation":null}`;
const replica = (id: string, poolId: string, volume: string, size: number) =>
  `{"name":"${id}","uuid":"${id}","size":${size},"pool":"${poolId}","share":"nbd","thin":false,"status":{"Created":"online"},"managed":true,"owners":{"volume":"${volume}","disown_all":false},"operation":null}`;

export const records: [string, string][] = [
  [
    objectKey(space, 'NodeSpec', 'node-1'),
    '{"id":"node-1","endpoint":"127.0.0.1:10124","labels":{"zone":"a"},"version":"v0.1.0"}',
  ],
  [
    objectKey(space, 'NodeSpec', 'node-2'),
    '{"id":"node-2","endpoint":"127.0.0.1:10125","labels":{"zone":"b"},"cordon_drain_state":{"Cordoned":{"cordonlabels":["maintenance"]}}}',
  ],
  [
    nodeLivenessKey(space, 'node-1'),
    '{"node":"node-1","grpcEndpoint":"127.0.0.1:10124","nbdEndpoint":"127.0.0.1:10809","version":"v0.1.0"}',
  ],
  [objectKey(space, 'PoolSpec', 'pool-1'), pool('pool-1', 'node-1')],
  [objectKey(space, 'PoolSpec', 'pool-2'), pool('pool-2', 'node-2')],
  [
    objectKey(space, 'VolumeSpec', ids.vol1),
    `{"uuid":"${ids.vol1}","size":1073741824,"labels":null,"num_replicas":2,"status":{"Created":"Online"},"policy":{"self_heal":true},"topology":null,"last_nexus_id":"${ids.nexus}","operation":null,"thin":false,"target":{"node":"node-1","nexus":"${ids.nexus}","protocol":"nbd","active":true,"config":{"controllerIdRange":{"start":1,"end":2},"reservationKey":10075049441338057178,"reservationType":"ExclusiveAccess","preemptPolicy":"Holder"},"frontend":{"host_acl":[]}},"publish_context":null,"affinity_group":null}`,
  ],
  [
    objectKey(space, 'VolumeSpec', ids.vol2),
    `{"uuid":"${ids.vol2}","size":5368709120,"labels":{"app":"db"},"num_replicas":1,"status":{"Created":"Online"},"policy":{"self_heal":true},"topology":null,"last_nexus_id":null,"operation":null,"thin":true,"target":null,"publish_context":null,"affinity_group":null,"metadata":{"persisted":{"snapshot_as_thin":true}},"storctl_future_field":{"kept":true}}`,
  ],
  [objectKey(space, 'ReplicaSpec', ids.rep1), replica(ids.rep1, 'pool-1', ids.vol1, 1073741824)],
  [objectKey(space, 'ReplicaSpec', ids.rep2), replica(ids.rep2, 'pool-2', ids.vol1, 1073741824)],
  [objectKey(space, 'ReplicaSpec', ids.rep3), replica(ids.rep3, 'pool-1', ids.vol2, 5368709120)],
  [
    objectKey(space, 'NexusSpec', ids.nexus),
    `{"uuid":"${ids.nexus}","name":"${ids.vol1}","node":"node-1","children":[{"Replica":{"uuid":"${ids.rep1}","share_uri":"bdev:///${ids.rep1}?uuid=${ids.rep1}"}},{"Replica":{"uuid":"${ids.rep2}","share_uri":"nbd://127.0.0.1:10810/${ids.rep2}?uuid=${ids.rep2}"}}],"size":1073741824,"spec_status":{"Created":"Online"},"share":"nbd","managed":true,"owner":"${ids.vol1}","operation":null}`,
  ],
  [
    nexusInfoKey(space, ids.nexus, ids.vol1),
    `{"children":[{"healthy":true,"uuid":"${ids.rep1}"},{"healthy":false,"uuid":"${ids.rep2}"}],"clean_shutdown":false}`,
  ],
  [
    objectKey(space, 'VolumeSnapshot', ids.snap),
    `{"status":{"Created":null},"spec":{"source_id":"${ids.vol2}","uuid":"${ids.snap}"},"metadata":{"operation":null,"timestamp":"2026-11-01T10:00:00Z","spec_size":5368709120,"size":5368709120,"total_allocated_size":3145728,"txn_id":"1","transactions":{"1":[{"status":{"Created":null},"spec":{"source_id":{"replica_id":"6a1c2b3d-5555-4c6d-9e0f-3a4b5c6d7e8f","pool_id":"pool-2","pool_uuid":"7b2d3c4e-6666-4d7e-8f90-4b5c6d7e8f90"},"uuid":"8c3e4d5f-7777-4e8f-9a01-5c6d7e8f9012"},"metadata":{"operation":null,"timestamp":"2026-11-01T10:00:00Z","source_spec_size":5368709120,"size":5368709120,"allocated_size":2097152,"meta":{"Volume":{"parent":"${ids.snap}","txn_id":"1"}}}}]}}}`,
  ],
  [
    objectKey(space, 'SwitchOver', ids.vol1),
    `{"callback_uri":"127.0.0.1:50053","node_name":"node-1","volume":"${ids.vol1}","operation":{"operation":"ReplacePath","result":null},"timestamp":"2026-11-01T10:00:00Z","existing_nqn":"nqn.2019-05.io.openebs:${ids.vol1}","new_path":null,"retry_count":1,"reuse_existing":true,"publish_context":null}`,
  ],
];

/** The fixture as a `storctl store dump` file (minus the liveness key, which is lease-bound). */
export function fixtureDump(): string {
  return records
    .filter(([k]) => !k.includes('/storctl/'))
    .map(([key, value]) => JSON.stringify({ key, value }))
    .join('\n');
}

export { clusterPrefix };
