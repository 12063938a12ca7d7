/**
 * Stored values from docs/mayastor-compat.md §1, as Mayastor writes them (compact JSON, its key order),
 * with the ids the reference elides (`…`) completed by real uuids. `reference` entries are the
 * reference's examples verbatim apart from those ids; the others exercise the remaining fields.
 */
import { nexusInfoKey, objectKey } from '../../../src/lib/store/keys.js';

export const space = { clusterId: '1013e263-e0ba-48b2-ae78-52d51b5da9c8', namespace: 'mayastor' };

export const ids = {
  volume: '4e01a5bc-7f3a-4c1e-9b0d-2a6f5e8c9d10',
  nexus: '8f5d061c-3b2a-4e6f-8c7d-9e0a1b2c3d4e',
  replica: '30b1a62e-4301-445b-88af-125eca1dcc6d',
  replicaOwner: 'ec4e66fd-3b33-4439-b504-d49aba53da26',
  poolUuid: '22ca10d3-4f2b-4b95-9814-9181c025cc1a',
  nexus2: 'd6ccbb97-5a2d-4c8e-b1f3-6e7d8c9b0a12',
  volume2: '456122b1-0f9e-4d8c-a7b6-5c4d3e2f1a09',
  child1: '82779efa-1c2d-4e3f-9a8b-7c6d5e4f3a21',
  child2: '2d98fa96-6b5a-4f3e-8d2c-1b0a9f8e7d65',
  snapshot: '7a1c9e3b-2d4f-4a6b-8c0e-1f3a5b7d9e2c',
  replicaSnapshot: 'b3d5f7a9-1c2e-4f6a-8b0d-3e5f7a9c1b4d',
  switchVolume: 'c0ffee00-1234-4abc-8def-0123456789ab',
};

export interface Fixture {
  name: string;
  type: string;
  key: string;
  json: string;
  /** Verbatim from the reference (ids completed). */
  reference?: boolean;
}

const key = (type: string, id: string) => objectKey(space, type, id);

export const volumeReference = `{"uuid":"${ids.volume}","size":5368709120,"labels":null,"num_replicas":2,"status":{"Created":"Online"},"policy":{"self_heal":true},"topology":{"node":null,"pool":{"Labelled":{"exclusion":{},"inclusion":{"openebs.io/created-by":"operator-diskpool"}}}},"last_nexus_id":null,"operation":null,"thin":true,"target":{"node":"node-2","nexus":"${ids.nexus}","protocol":"nvmf","active":true,"config":{"controllerIdRange":{"start":11,"end":12},"reservationKey":10075049441338057178,"reservationType":"ExclusiveAccess","preemptPolicy":"Holder"},"frontend":{"host_acl":[{"node_name":"node-2","node_nqn":"nqn.2019-05.io.openebs:node-name:node-2"}]}},"publish_context":{"ioTimeout":"30"},"affinity_group":null}`;

export const replicaReference = `{"name":"${ids.replica}","uuid":"${ids.replica}","size":10485761,"pool":"pool-1","share":"none","thin":false,"status":{"Created":"online"},"managed":true,"owners":{"volume":"${ids.replicaOwner}","disown_all":false},"operation":null}`;

export const poolReference = `{"node":"node-1","id":"pool-1-on-node-1","disks":["/dev/sdb"],"status":{"Created":"Online"},"labels":{"openebs.io/created-by":"operator-diskpool"},"operation":null}`;

export const nexusReference = `{"uuid":"${ids.nexus2}","name":"${ids.volume2}","node":"node-4","children":[{"Replica":{"uuid":"${ids.child1}","share_uri":"bdev:///${ids.child1}?uuid=${ids.child1}"}},{"Replica":{"uuid":"${ids.child2}","share_uri":"nvmf://10.0.0.7:8420/nqn.2019-05.io.openebs:${ids.child2}?uuid=${ids.child2}"}}],"size":2147483648,"spec_status":{"Created":"Online"},"share":"nvmf","managed":true,"owner":"${ids.volume2}","operation":null}`;

export const nodeReference = `{"id":"node-1","endpoint":"10.0.0.1:10124","labels":{}}`;

export const nexusInfoReference = `{"children":[{"healthy":true,"uuid":"${ids.child1}"},{"healthy":true,"uuid":"${ids.child2}"}],"clean_shutdown":false}`;

export const switchOverReference = `{"callback_uri":"10.0.0.7:50053","node_name":"worker-2","volume":"${ids.switchVolume}","operation":{"operation":"ReplacePath","result":null},"timestamp":"2024-08-08T01:16:25Z","existing_nqn":"nqn.2019-05.io.openebs:${ids.switchVolume}","new_path":"nvmf://10.0.0.8:8420/nqn.2019-05.io.openebs:${ids.switchVolume}","retry_count":0,"reuse_existing":true,"publish_context":{"ioTimeout":"30"}}`;

export const coreRegistryReference = `{"id":"db98f8bb-4afc-45d0-85b9-24c99cc443f2","registration":"Automatic"}`;

export const leaseOwnerReference = `{"kind":"CoreAgent","lease_id":"694d8a7f3c2b1e05","instance_name":"mayastor-agent-core-6b8d9c7f5-x2k4p"}`;

export const appNodeReference = `{"id":"worker-1","endpoint":"10.0.0.11:50055","labels":null}`;

const replicaSnapshot = `{"status":{"Created":null},"spec":{"source_id":{"replica_id":"${ids.child1}","pool_id":"pool-1-on-node-1","pool_uuid":"${ids.poolUuid}"},"uuid":"${ids.replicaSnapshot}"},"metadata":{"operation":null,"timestamp":"2024-08-08T01:16:25.123456789Z","source_spec_size":2147483648,"size":1048576,"allocated_size":1048576,"meta":{"Volume":{"parent":"${ids.snapshot}","txn_id":"1"}}}}`;

export const volumeSnapshotReference = `{"status":{"Created":null},"spec":{"source_id":"${ids.volume2}","uuid":"${ids.snapshot}"},"metadata":{"operation":null,"timestamp":"2024-08-08T01:16:25.123456789Z","spec_size":2147483648,"size":1048576,"total_allocated_size":1048576,"txn_id":"1","transactions":{"1":[${replicaSnapshot}]}}}`;

export const fixtures: Fixture[] = [
  {
    name: 'VolumeSpec (real dump shape)',
    type: 'VolumeSpec',
    key: key('VolumeSpec', ids.volume),
    json: volumeReference,
    reference: true,
  },
  {
    name: 'VolumeSpec with restore source, metadata, max_snapshots, explicit topology, pending Publish2',
    type: 'VolumeSpec',
    key: key('VolumeSpec', ids.volume2),
    json: `{"uuid":"${ids.volume2}","size":1073741824,"labels":{"app":"db"},"num_replicas":3,"status":"Creating","policy":{"self_heal":false},"topology":{"node":{"Explicit":{"allowed_nodes":["node-1","node-2"],"preferred_nodes":["node-2"]}},"pool":{"Labelled":{"exclusion":{"zone":"b"},"inclusion":{"openebs.io/created-by":"operator-diskpool"},"creation_affinity_keys":["zone"]}}},"last_nexus_id":"${ids.nexus2}","operation":{"operation":{"Publish2":{"config":{"node":"node-1","nexus":"${ids.nexus}","protocol":"nvmf","active":true,"config":{"controllerIdRange":{"start":1,"end":2},"reservationKey":0,"reservationType":"Reserved","preemptPolicy":{"ArgKey":null}},"frontend":{"host_acl":[]}},"publish_context":{"ioTimeout":"30"}}},"result":null},"thin":false,"content_source":{"Snapshot":["${ids.snapshot}","${ids.volume}"]},"target":null,"publish_context":null,"affinity_group":{"id":"default/sts-db"},"metadata":{"persisted":{"snapshot_as_thin":true}},"max_snapshots":10}`,
  },
  {
    name: 'ReplicaSpec (test fixture)',
    type: 'ReplicaSpec',
    key: key('ReplicaSpec', ids.replica),
    json: replicaReference,
    reference: true,
  },
  {
    name: 'ReplicaSpec with [pool, uuid] ref, share op, allowed hosts, kind',
    type: 'ReplicaSpec',
    key: key('ReplicaSpec', ids.child2),
    json: `{"name":"r-2","uuid":"${ids.child2}","size":2147483648,"pool":["pool-1","${ids.poolUuid}"],"share":"nvmf","thin":true,"status":"Deleting","managed":true,"owners":{"volume":null,"disown_all":true},"operation":{"operation":{"Share":["nvmf",["nqn.2019-05.io.openebs:node-name:node-4"]]},"result":true},"allowed_hosts":["nqn.2019-05.io.openebs:node-name:node-4"],"kind":"snapshotClone"}`,
  },
  {
    name: 'PoolSpec',
    type: 'PoolSpec',
    key: key('PoolSpec', 'pool-1-on-node-1'),
    json: poolReference,
    reference: true,
  },
  {
    name: 'PoolSpec labelling',
    type: 'PoolSpec',
    key: key('PoolSpec', 'pool-2'),
    json: `{"node":"node-2","id":"pool-2","disks":["aio:///dev/vdb"],"status":{"Created":"Degraded"},"labels":null,"operation":{"operation":{"Label":{"labels":{"tier":"ssd"},"overwrite":false}},"result":false}}`,
  },
  {
    name: 'NexusSpec (test fixture)',
    type: 'NexusSpec',
    key: key('NexusSpec', ids.nexus2),
    json: nexusReference,
    reference: true,
  },
  {
    name: 'NexusSpec shut down, with nvmf config, uri child, status info, allowed hosts',
    type: 'NexusSpec',
    key: key('NexusSpec', ids.nexus),
    json: `{"uuid":"${ids.nexus}","name":"${ids.nexus}","node":"node-2","children":[{"Uri":"aio:///dev/vdc?uuid=${ids.child1}"}],"size":5368709120,"spec_status":{"Created":"Shutdown"},"share":"none","managed":false,"owner":null,"operation":{"operation":{"OwnerUpdate":{"Volume":"${ids.volume}"}},"result":null},"nvmf_config":{"controllerIdRange":{"start":65519,"end":65519},"reservationKey":18446744073709551615,"reservationType":"ExclusiveAccessAllRegs","preemptPolicy":{"ArgKey":9007199254740993}},"status_info":{"shutdown_failed":true},"allowed_hosts":["nqn.2019-05.io.openebs:node-name:node-2"]}`,
  },
  {
    name: 'NodeSpec (minimal test fixture)',
    type: 'NodeSpec',
    key: key('NodeSpec', 'node-1'),
    json: nodeReference,
    reference: true,
  },
  {
    name: 'NodeSpec draining, every optional field',
    type: 'NodeSpec',
    key: key('NodeSpec', 'node-3'),
    json: `{"id":"node-3","endpoint":"10.0.0.3:10124","labels":{"zone":"a"},"cordon_drain_state":{"Draining":{"cordonlabels":["maint"],"drainlabels":["upgrade"]}},"node_nqn":"nqn.2019-05.io.openebs:node-name:node-3","draining_volumes":["${ids.volume}"],"operation":{"operation":{"AddDrainingVolumes":{"volumes":["${ids.volume}"]}},"result":null},"features":{"asymmetricNamespaceAccess":true,"logicalVolumeManager":false,"snapshotRebuild":null,"rdmaCapableIoEngine":false},"bugfixes":{"nexusRebuildReplicaAncestry":true},"version":"v2.7.0"}`,
  },
  {
    name: 'VolumeSnapshot with one transaction',
    type: 'VolumeSnapshot',
    key: key('VolumeSnapshot', ids.snapshot),
    json: volumeSnapshotReference,
    reference: true,
  },
  {
    name: 'VolumeSnapshot being created (txn 2)',
    type: 'VolumeSnapshot',
    key: key('VolumeSnapshot', ids.replicaSnapshot),
    json: `{"status":"Creating","spec":{"source_id":"${ids.volume}","uuid":"${ids.replicaSnapshot}"},"metadata":{"operation":{"operation":{"Create":{"txn_id":"2","replicas":[${replicaSnapshot.replace(ids.replicaSnapshot, ids.child2)}]}},"result":null},"timestamp":null,"spec_size":0,"size":0,"total_allocated_size":0,"txn_id":"2","transactions":{}}}`,
  },
  {
    name: 'NexusInfo (io-engine, sorted keys)',
    type: 'NexusInfo',
    key: nexusInfoKey(space, ids.nexus2, ids.volume2),
    json: nexusInfoReference,
    reference: true,
  },
  {
    name: 'SwitchOver',
    type: 'SwitchOver',
    key: key('SwitchOver', ids.switchVolume),
    json: switchOverReference,
    reference: true,
  },
  {
    name: 'SwitchOver errored',
    type: 'SwitchOver',
    key: key('SwitchOver', ids.volume),
    json: `{"callback_uri":"10.0.0.7:50053","node_name":"worker-2","volume":"${ids.volume}","operation":{"operation":{"Errored":"no healthy replicas"},"result":false},"timestamp":"2024-08-08T01:16:25Z","existing_nqn":"nqn.2019-05.io.openebs:${ids.volume}","new_path":null,"retry_count":7,"reuse_existing":false,"publish_context":null}`,
  },
  {
    name: 'CoreRegistryConfig',
    type: 'CoreRegistryConfig',
    key: key('CoreRegistryConfig', 'db98f8bb-4afc-45d0-85b9-24c99cc443f2'),
    json: coreRegistryReference,
    reference: true,
  },
  {
    name: 'CoreRegistryConfig in v1 compat',
    type: 'CoreRegistryConfig',
    key: key('CoreRegistryConfig', 'db98f8bb-4afc-45d0-85b9-24c99cc443f2'),
    json: `{"id":"db98f8bb-4afc-45d0-85b9-24c99cc443f2","registration":"Manual","mayastor_compat_v1":true}`,
  },
  {
    name: 'StoreLeaseOwner',
    type: 'StoreLeaseOwner',
    key: key('StoreLeaseOwner', 'CoreAgent'),
    json: leaseOwnerReference,
    reference: true,
  },
  {
    name: 'AppNodeSpec',
    type: 'AppNodeSpec',
    key: key('AppNodeSpec', 'worker-1'),
    json: appNodeReference,
    reference: true,
  },
  {
    name: 'AppNodeSpec with labels',
    type: 'AppNodeSpec',
    key: key('AppNodeSpec', 'worker-2'),
    json: `{"id":"worker-2","endpoint":"10.0.0.12:50055","labels":{"topology.kubernetes.io/zone":"a"}}`,
  },
  {
    // Upstream's camelCase WatchCfg (mayastor-control-plane core agent, watcher/watch.rs).
    name: 'WatchConfig of a volume',
    type: 'WatchConfig',
    key: key('WatchConfig', `volumes/${ids.volume}`),
    json: `{"watchId":{"id":{"Volume":"${ids.volume}"}},"watches":[{"params":{"callback":{"Uri":"http://10.0.0.9:8080/notify"},"type":"Actual"}}]}`,
    reference: true,
  },
];
