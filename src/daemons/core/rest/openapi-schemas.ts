/**
 * The schemas of storctl's OpenAPI document (see openapi.ts): Mayastor's REST v0 schemas
 * (openebs/mayastor-control-plane, control-plane/rest/openapi-specs/v0_api_spec.yaml) with the same
 * names, fields and required lists, for the bodies storctl serves. Where storctl deliberately differs
 * the schema or field carries `x-storctl-extension: true` and says why (docs/mayastor-compat.md).
 */

type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str: Schema = { type: 'string' };
const uuid: Schema = { type: 'string', format: 'uuid' };
const bool: Schema = { type: 'boolean' };
const u64: Schema = { type: 'integer', format: 'int64', minimum: 0 };
const u32: Schema = { type: 'integer', format: 'int32', minimum: 0 };
const strMap: Schema = { type: 'object', additionalProperties: str };
const strList: Schema = { type: 'array', items: str };
const obj = (properties: Record<string, Schema>, required: string[], extra: Schema = {}): Schema => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
  ...extra,
});
const strEnum = (values: string[], extra: Schema = {}): Schema => ({
  type: 'string',
  enum: values,
  ...extra,
});
/** A field or schema storctl adds or changes on purpose. */
const ext = (s: Schema, why: string): Schema => ({ ...s, description: why, 'x-storctl-extension': true });
const oneOfKeys = (keys: string[]) => ({ oneOf: keys.map((k) => ({ required: [k] })) });
const operation = (ops: string[]): Schema =>
  obj({ operation: strEnum(ops), result: bool }, ['operation'], {
    description: 'Record of the operation in progress',
  });

const NBD = 'storctl io-engines export targets over NBD (the only share protocol they serve)';

export const schemas: Record<string, Schema> = {
  VolumeId: uuid,
  SnapshotId: uuid,
  ReplicaId: uuid,
  NodeId: { type: 'string', description: 'storage node identifier' },
  AppNodeId: { type: 'string', description: 'App node identifier.' },
  PoolId: { type: 'string', description: 'storage pool identifier' },
  PoolUuid: uuid,
  HostNqn: { type: 'string', description: 'NVMe Qualified Name of a host' },
  JsonGeneric: { type: 'object', description: 'Generic JSON value' },

  RestJsonError: obj(
    {
      details: str,
      message: str,
      kind: strEnum([
        'Timeout',
        'Deserialize',
        'Internal',
        'InvalidArgument',
        'DeadlineExceeded',
        'NotFound',
        'AlreadyExists',
        'PermissionDenied',
        'ResourceExhausted',
        'FailedPrecondition',
        'NotShared',
        'NotPublished',
        'AlreadyPublished',
        'AlreadyShared',
        'Aborted',
        'OutOfRange',
        'Unimplemented',
        'Unavailable',
        'Unauthenticated',
        'Unauthorized',
        'Conflict',
        'FailedPersist',
        'Deleting',
        'InUse',
        'CapacityLimitExceeded',
        'NotAcceptable',
      ]),
    },
    ['details', 'kind', 'message'],
    { description: 'Rest Json Error format' },
  ),

  // --- shared enums ------------------------------------------------------------------------------------
  SpecStatus: strEnum(['Creating', 'Created', 'Deleting', 'Deleted']),
  Protocol: strEnum(['none', 'nvmf', 'iscsi', 'nbd']),
  VolumeShareProtocol: ext(strEnum(['nvmf', 'iscsi', 'nbd']), `Volume Share Protocol; 'nbd' added: ${NBD}`),
  NexusShareProtocol: ext(strEnum(['nvmf', 'iscsi', 'nbd']), `Nexus Share Protocol; 'nbd' added: ${NBD}`),
  ReplicaShareProtocol: ext(strEnum(['nvmf', 'nbd']), `Replica Share Protocol; 'nbd' added: ${NBD}`),
  ChildState: strEnum(['Unknown', 'Online', 'Degraded', 'Faulted']),
  ChildStateReason: strEnum(['OutOfSpace']),
  NexusState: strEnum(['Unknown', 'Online', 'Degraded', 'Faulted', 'ShuttingDown', 'Shutdown']),
  NodeStatus: strEnum(['Unknown', 'Online', 'Offline']),
  PoolStatus: strEnum(['Unknown', 'Online', 'Degraded', 'Faulted']),
  ReplicaState: strEnum(['Unknown', 'Online', 'Degraded', 'Faulted']),
  ReplicaKind: strEnum(['Regular', 'Snapshot', 'SnapshotClone']),
  VolumeStatus: strEnum(['Unknown', 'Online', 'Degraded', 'Faulted', 'Shutdown']),
  RebuildJobState: strEnum(['Init', 'Rebuilding', 'Stopped', 'Paused', 'Failed', 'Completed']),

  // --- request bodies ----------------------------------------------------------------------------------
  CreateNexusBody: obj({ children: strList, size: u64 }, ['children', 'size']),
  CreatePoolBody: obj(
    {
      disks: strList,
      labels: strMap,
      capacity: ext(
        u64,
        'capacity of the pool in bytes: a storctl pool is a directory, so its size is set here',
      ),
    },
    ['disks'],
  ),
  CreateReplicaBody: obj(
    {
      share: ref('ReplicaShareProtocol'),
      'allowed-hosts': { type: 'array', items: ref('HostNqn') },
      size: u64,
      thin: bool,
    },
    ['size', 'thin'],
  ),
  VolumePolicy: obj({ self_heal: bool }, ['self_heal']),
  ExplicitNodeTopology: obj({ allowed_nodes: strList, preferred_nodes: strList }, [
    'allowed_nodes',
    'preferred_nodes',
  ]),
  LabelledTopology: obj({ exclusion: strMap, inclusion: strMap, affinitykey: strList }, [
    'exclusion',
    'inclusion',
    'affinitykey',
  ]),
  NodeTopology: obj({ explicit: ref('ExplicitNodeTopology'), labelled: ref('LabelledTopology') }, [], {
    additionalProperties: false,
    ...oneOfKeys(['explicit', 'labelled']),
  }),
  PoolTopology: obj({ labelled: ref('LabelledTopology') }, [], {
    additionalProperties: false,
    ...oneOfKeys(['labelled']),
  }),
  Topology: obj({ node_topology: ref('NodeTopology'), pool_topology: ref('PoolTopology') }, []),
  AffinityGroup: obj({ id: str }, ['id']),
  CreateVolumeBody: obj(
    {
      policy: ref('VolumePolicy'),
      replicas: { type: 'integer', format: 'uint8', minimum: 0, maximum: 255 },
      size: u64,
      thin: bool,
      topology: ref('Topology'),
      labels: strMap,
      affinity_group: ref('AffinityGroup'),
      max_snapshots: u32,
    },
    ['policy', 'replicas', 'size', 'thin'],
  ),
  SetVolumePropertyBody: obj({ max_snapshots: u32 }, [], oneOfKeys(['max_snapshots'])),
  ResizeVolumeBody: obj({ size: { type: 'integer', format: 'uint64', minimum: 0 } }, ['size']),
  PublishVolumeBody: obj(
    {
      publish_context: strMap,
      reuse_existing: bool,
      node: ref('NodeId'),
      protocol: ref('VolumeShareProtocol'),
      republish: bool,
      frontend_node: str,
    },
    ['publish_context', 'protocol'],
  ),
  RegisterAppNode: obj(
    {
      endpoint: { type: 'string', description: 'gRPC server endpoint of the app node (host:port)' },
      labels: strMap,
    },
    ['endpoint'],
  ),

  // --- nexuses -----------------------------------------------------------------------------------------
  Child: obj(
    {
      rebuildProgress: { type: 'integer', minimum: 0, maximum: 100 },
      state: ref('ChildState'),
      state_reason: ref('ChildStateReason'),
      uri: str,
    },
    ['state', 'uri'],
  ),
  Nexus: obj(
    {
      children: { type: 'array', items: ref('Child') },
      deviceUri: str,
      node: str,
      rebuilds: u32,
      protocol: ref('Protocol'),
      size: u64,
      state: ref('NexusState'),
      // storctl's: why a Shutdown nexus shut itself down (its NexusInfo could not be persisted, or
      // a switchover fenced it); upstream has no such field.
      shutdown_reason: str,
      uuid,
    },
    ['children', 'deviceUri', 'node', 'rebuilds', 'protocol', 'size', 'state', 'uuid'],
  ),
  RebuildRecord: obj(
    {
      childUri: str,
      srcUri: str,
      rebuildJobState: ref('RebuildJobState'),
      blocksTotal: u64,
      blocksRecovered: u64,
      blocksTransferred: u64,
      blocksRemaining: u64,
      blockSize: u64,
      isPartial: bool,
      startTime: { type: 'string', format: 'date-time' },
      endTime: { type: 'string', format: 'date-time' },
    },
    [
      'childUri',
      'srcUri',
      'rebuildJobState',
      'blocksTotal',
      'blocksRecovered',
      'blocksTransferred',
      'blocksRemaining',
      'blockSize',
      'isPartial',
      'startTime',
      'endTime',
    ],
  ),
  RebuildHistory: obj({ targetUuid: uuid, records: { type: 'array', items: ref('RebuildRecord') } }, [
    'targetUuid',
    'records',
  ]),

  // --- nodes -------------------------------------------------------------------------------------------
  CordonedState: obj({ cordonlabels: strList }, ['cordonlabels']),
  DrainState: obj({ cordonlabels: strList, drainlabels: strList }, ['cordonlabels', 'drainlabels']),
  CordonDrainState: obj(
    {
      cordonedstate: ref('CordonedState'),
      drainingstate: ref('DrainState'),
      drainedstate: ref('DrainState'),
    },
    [],
    oneOfKeys(['cordonedstate', 'drainingstate', 'drainedstate']),
  ),
  NodeSpec: obj(
    {
      grpcEndpoint: str,
      id: ref('NodeId'),
      labels: strMap,
      cordondrainstate: ref('CordonDrainState'),
      node_nqn: ref('HostNqn'),
      version: ext(
        str,
        'version of the io-engine that registered the node (later Mayastor releases report it too)',
      ),
    },
    ['grpcEndpoint', 'id'],
    { additionalProperties: false },
  ),
  NodeState: obj(
    {
      grpcEndpoint: str,
      id: ref('NodeId'),
      status: ref('NodeStatus'),
      node_nqn: ref('HostNqn'),
      nbdEndpoint: ext(str, 'host:port of the NBD server the io-engine exports targets and replicas on'),
      cordoned: ext(
        bool,
        'whether the node is cordoned (any cordon or drain label), for clients that only need a flag',
      ),
    },
    ['grpcEndpoint', 'id', 'status', 'cordoned'],
  ),
  Node: obj({ id: ref('NodeId'), spec: ref('NodeSpec'), state: ref('NodeState') }, ['id', 'state'], {
    description:
      "io-engine storage node information. 'state' required: storctl always reports one (Unknown or Offline for a node it has not heard from)",
    'x-storctl-extension': true,
  }),
  BlockDevice: obj(
    {
      available: bool,
      connection_type: str,
      devlinks: strList,
      devmajor: { type: 'integer', format: 'int32' },
      devminor: { type: 'integer', format: 'int32' },
      devname: str,
      devpath: str,
      devtype: str,
      filesystem: obj({ fstype: str, label: str, mountpoint: str, uuid: str }, [
        'fstype',
        'label',
        'mountpoint',
        'uuid',
      ]),
      is_rotational: bool,
      model: str,
      partition: obj(
        {
          name: str,
          number: { type: 'integer', format: 'int32' },
          parent: str,
          scheme: str,
          typeid: str,
          uuid: str,
        },
        ['name', 'number', 'parent', 'scheme', 'typeid', 'uuid'],
      ),
      size: u64,
    },
    [
      'available',
      'connection_type',
      'devlinks',
      'devmajor',
      'devminor',
      'devname',
      'devpath',
      'devtype',
      'model',
      'size',
    ],
  ),

  // --- pools and replicas ------------------------------------------------------------------------------
  PoolSpec: obj(
    { disks: strList, id: ref('PoolId'), labels: strMap, node: ref('NodeId'), status: ref('SpecStatus') },
    ['disks', 'id', 'node', 'status'],
  ),
  PoolState: obj(
    {
      capacity: u64,
      disks: strList,
      id: ref('PoolId'),
      node: ref('NodeId'),
      status: ref('PoolStatus'),
      used: u64,
      committed: u64,
    },
    ['capacity', 'disks', 'id', 'node', 'status', 'used'],
  ),
  Pool: obj({ id: ref('PoolId'), spec: ref('PoolSpec'), state: ref('PoolState') }, ['id'], {
    minProperties: 2,
  }),
  ReplicaSpaceUsage: obj(
    {
      capacity_bytes: u64,
      allocated_bytes: u64,
      allocated_bytes_snapshots: u64,
      allocated_bytes_all_snapshots: u64,
      cluster_size: u64,
      clusters: u64,
      allocated_clusters: u64,
    },
    [
      'capacity_bytes',
      'allocated_bytes',
      'allocated_bytes_snapshots',
      'cluster_size',
      'clusters',
      'allocated_clusters',
    ],
    {
      description:
        'Replica space usage. A storctl replica is a sparse file: the cluster is the 4 KiB file-system block its allocation is counted in.',
    },
  ),
  Replica: obj(
    {
      node: ref('NodeId'),
      pool: ref('PoolId'),
      poolUuid: ref('PoolUuid'),
      share: ref('Protocol'),
      size: u64,
      space: ref('ReplicaSpaceUsage'),
      state: ref('ReplicaState'),
      thin: bool,
      uri: str,
      uuid,
      'allowed-hosts': { type: 'array', items: ref('HostNqn') },
      kind: ref('ReplicaKind'),
      owner: ext(uuid, 'the volume that owns the replica, if any'),
    },
    ['node', 'pool', 'share', 'size', 'state', 'thin', 'uri', 'uuid', 'kind'],
  ),

  // --- specs (GET /specs) ------------------------------------------------------------------------------
  NexusSpec: obj(
    {
      children: strList,
      managed: bool,
      node: str,
      operation: operation(['Create', 'Destroy', 'Share', 'Unshare', 'AddChild', 'RemoveChild', 'Shutdown']),
      owner: uuid,
      share: ref('Protocol'),
      size: u64,
      status: ref('SpecStatus'),
      uuid,
    },
    ['children', 'managed', 'node', 'share', 'size', 'status', 'uuid'],
  ),
  ReplicaSpec: obj(
    {
      managed: bool,
      operation: {
        ...operation(['Create', 'Destroy', 'Share', 'Unshare', 'OwnerUpdate', 'Resize']),
        description:
          "Record of the operation in progress. 'OwnerUpdate' and 'Resize' added: Mayastor's stored ReplicaOperation has them, its REST enum does not",
        'x-storctl-extension': true,
      },
      owners: obj({ nexuses: { type: 'array', items: uuid }, volume: uuid }, ['nexuses']),
      pool: str,
      poolUuid: ref('PoolUuid'),
      share: ref('Protocol'),
      size: u64,
      status: ref('SpecStatus'),
      thin: bool,
      uuid,
      kind: ref('ReplicaKind'),
    },
    ['managed', 'owners', 'pool', 'share', 'size', 'status', 'thin', 'uuid'],
  ),
  Specs: obj(
    {
      nexuses: { type: 'array', items: ref('NexusSpec') },
      pools: { type: 'array', items: ref('PoolSpec') },
      replicas: { type: 'array', items: ref('ReplicaSpec') },
      volumes: { type: 'array', items: ref('VolumeSpec') },
    },
    ['nexuses', 'pools', 'replicas', 'volumes'],
  ),

  // --- volumes -----------------------------------------------------------------------------------------
  NodeAccessInfo: obj({ name: str, nqn: str }, ['name', 'nqn']),
  VolumeTarget: obj(
    {
      node: str,
      protocol: ref('VolumeShareProtocol'),
      frontend_nodes: { type: 'array', items: ref('NodeAccessInfo') },
    },
    ['node'],
  ),
  SnapshotAsSource: obj({ snapshot: ref('SnapshotId'), volume: ref('VolumeId') }, ['snapshot', 'volume']),
  VolumeContentSource: obj({ snapshot: ref('SnapshotAsSource') }, [], {
    additionalProperties: false,
    ...oneOfKeys(['snapshot']),
  }),
  VolumeSpec: obj(
    {
      labels: strMap,
      num_replicas: { type: 'integer', format: 'uint8', minimum: 0, maximum: 255 },
      operation: operation([
        'Create',
        'Destroy',
        'Share',
        'Unshare',
        'SetReplica',
        'RemoveUnusedReplica',
        'Publish',
        'Republish',
        'Unpublish',
        'CreateSnapshot',
        'DestroySnapshot',
        'Resize',
        'SetVolumeProperty',
      ]),
      size: u64,
      status: ref('SpecStatus'),
      target: ref('VolumeTarget'),
      uuid,
      topology: ref('Topology'),
      policy: ref('VolumePolicy'),
      thin: bool,
      as_thin: bool,
      affinity_group: ref('AffinityGroup'),
      content_source: ref('VolumeContentSource'),
      num_snapshots: u32,
      max_snapshots: u32,
    },
    ['num_replicas', 'size', 'status', 'uuid', 'policy', 'thin', 'num_snapshots'],
    {
      description:
        "User specification of a volume. Upstream's required list also names 'num_paths' and 'protocol', which its schema declares nowhere and its server never sends; they are left out here.",
    },
  ),
  ReplicaUsage: obj(
    { capacity: u64, allocated: u64, allocated_snapshots: u64, allocated_all_snapshots: u64 },
    ['capacity', 'allocated', 'allocated_snapshots', 'allocated_all_snapshots'],
  ),
  ReplicaTopology: obj(
    {
      node: ref('NodeId'),
      pool: ref('PoolId'),
      state: ref('ReplicaState'),
      'child-status': ref('ChildState'),
      'child-status-reason': ref('ChildStateReason'),
      usage: ref('ReplicaUsage'),
      'rebuild-progress': { type: 'integer', minimum: 0, maximum: 100 },
    },
    ['state'],
  ),
  VolumeUsage: obj(
    {
      capacity: u64,
      allocated: u64,
      allocated_replica: u64,
      allocated_snapshots: u64,
      allocated_all_snapshots: u64,
      total_allocated: u64,
      total_allocated_replicas: u64,
      total_allocated_snapshots: u64,
    },
    [
      'capacity',
      'allocated',
      'allocated_replica',
      'allocated_snapshots',
      'allocated_all_snapshots',
      'total_allocated',
      'total_allocated_replicas',
      'total_allocated_snapshots',
    ],
  ),
  VolumeState: obj(
    {
      target: ref('Nexus'),
      size: u64,
      status: ref('VolumeStatus'),
      uuid,
      replica_topology: { type: 'object', additionalProperties: ref('ReplicaTopology') },
      usage: ref('VolumeUsage'),
    },
    ['size', 'uuid', 'status', 'replica_topology'],
  ),
  Volume: obj({ spec: ref('VolumeSpec'), state: ref('VolumeState') }, ['spec', 'state']),
  Volumes: obj({ entries: { type: 'array', items: ref('Volume') }, next_token: { type: 'integer' } }, [
    'entries',
  ]),

  // --- snapshots ---------------------------------------------------------------------------------------
  ReplicaSnapshot: obj({ uuid: ref('SnapshotId'), source_id: ref('ReplicaId'), status: ref('SpecStatus') }, [
    'uuid',
    'source_id',
    'status',
  ]),
  VolumeSnapshotMetadata: obj(
    {
      status: ref('SpecStatus'),
      timestamp: { type: 'string', format: 'date-time' },
      size: u64,
      spec_size: u64,
      total_allocated_size: u64,
      txn_id: str,
      transactions: {
        type: 'object',
        additionalProperties: { type: 'array', items: ref('ReplicaSnapshot') },
      },
      num_restores: u32,
      num_snapshot_replicas: u32,
    },
    [
      'status',
      'size',
      'spec_size',
      'total_allocated_size',
      'txn_id',
      'transactions',
      'num_restores',
      'num_snapshot_replicas',
    ],
  ),
  VolumeSnapshotSpec: obj({ uuid: ref('SnapshotId'), source_volume: ref('VolumeId') }, [
    'uuid',
    'source_volume',
  ]),
  VolumeSnapshotDefinition: obj(
    { metadata: ref('VolumeSnapshotMetadata'), spec: ref('VolumeSnapshotSpec') },
    ['metadata', 'spec'],
  ),
  OnlineReplicaSnapshotState: obj(
    {
      uuid: ref('SnapshotId'),
      source_id: ref('ReplicaId'),
      pool_id: ref('PoolId'),
      pool_uuid: ref('PoolUuid'),
      timestamp: { type: 'string', format: 'date-time' },
      size: u64,
      allocated_size: u64,
      predecessor_alloc_size: u64,
    },
    [
      'uuid',
      'source_id',
      'pool_uuid',
      'pool_id',
      'timestamp',
      'size',
      'allocated_size',
      'predecessor_alloc_size',
    ],
  ),
  OfflineReplicaSnapshotState: obj(
    {
      uuid: ref('SnapshotId'),
      source_id: ref('ReplicaId'),
      pool_id: ref('PoolId'),
      pool_uuid: ref('PoolUuid'),
    },
    ['uuid', 'source_id', 'pool_uuid', 'pool_id'],
  ),
  ReplicaSnapshotState: obj(
    { online: ref('OnlineReplicaSnapshotState'), offline: ref('OfflineReplicaSnapshotState') },
    [],
    { additionalProperties: false, ...oneOfKeys(['online', 'offline']) },
  ),
  VolumeSnapshotState: obj(
    {
      uuid: ref('SnapshotId'),
      allocated_size: u64,
      source_volume: ref('VolumeId'),
      timestamp: { type: 'string', format: 'date-time' },
      ready_as_source: bool,
      replica_snapshots: { type: 'array', items: ref('ReplicaSnapshotState') },
    },
    ['uuid', 'allocated_size', 'source_volume', 'ready_as_source', 'replica_snapshots'],
  ),
  VolumeSnapshot: obj({ definition: ref('VolumeSnapshotDefinition'), state: ref('VolumeSnapshotState') }, [
    'definition',
    'state',
  ]),
  VolumeSnapshots: obj(
    { entries: { type: 'array', items: ref('VolumeSnapshot') }, next_token: { type: 'integer' } },
    ['entries'],
  ),

  // --- watches and app nodes ---------------------------------------------------------------------------
  RestWatch: obj({ callback: str, resource: str }, ['callback', 'resource']),
  AppNodeSpec: obj(
    {
      id: ref('AppNodeId'),
      endpoint: { type: 'string', description: 'gRPC endpoint (host:port)' },
      labels: strMap,
    },
    ['id', 'endpoint'],
  ),
  AppNodeState: obj({ id: ref('AppNodeId'), endpoint: str, status: strEnum(['Online', 'Offline']) }, [
    'id',
    'endpoint',
    'status',
  ]),
  AppNode: obj({ id: ref('AppNodeId'), spec: ref('AppNodeSpec'), state: ref('AppNodeState') }, [
    'id',
    'spec',
  ]),
  AppNodes: obj({ entries: { type: 'array', items: ref('AppNode') }, next_token: { type: 'integer' } }, [
    'entries',
  ]),
};
