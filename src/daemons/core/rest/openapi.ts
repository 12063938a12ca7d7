import { ref, schemas } from './openapi-schemas.js';

/**
 * storctl's OpenAPI 3 document of the REST API core serves (served at `GET /v0/api/spec`, where
 * Mayastor's api-rest serves its own). Derived from Mayastor's v0 schema
 * (openebs/mayastor-control-plane, control-plane/rest/openapi-specs/v0_api_spec.yaml): the same
 * paths, operation ids and schemas for every endpoint storctl serves; what storctl adds or does
 * differently is marked `x-storctl-extension: true` with a description (docs/mayastor-compat.md).
 * The REST integration suites validate every response they receive against it.
 */

type Obj = Record<string, unknown>;

const str: Obj = { type: 'string' };
const uuid: Obj = { type: 'string', format: 'uuid' };
const int: Obj = { type: 'integer' };
const bool: Obj = { type: 'boolean', default: false };
const errors = {
  '4XX': { $ref: '#/components/responses/ClientError' },
  '5XX': { $ref: '#/components/responses/ServerError' },
};
const json = (schema: Obj) => ({ description: 'OK', content: { 'application/json': { schema } } });
const list = (name: string) => json({ type: 'array', items: ref(name) });
const noContent = { description: 'OK' };
const path = (name: string, schema: Obj = str) => ({ in: 'path', name, required: true, schema });
const query = (name: string, schema: Obj, required = false) => ({ in: 'query', name, required, schema });
const body = (name: string) => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
const ext = (description: string) => ({ description, 'x-storctl-extension': true });

interface OpSpec {
  params?: Obj[];
  body?: string;
  /** The success response; 204 without a body when absent. */
  ok?: Obj;
  status?: string;
  extra?: Obj;
}
const op = (tag: string, operationId: string, o: OpSpec = {}) => ({
  tags: [tag],
  operationId,
  ...(o.params?.length ? { parameters: o.params } : {}),
  ...(o.body ? { requestBody: body(o.body) } : {}),
  responses: { [o.status ?? (o.ok ? '200' : '204')]: o.ok ?? noContent, ...errors },
  ...o.extra,
});

const volumeId = path('volume_id', ref('VolumeId'));
const snapshotId = path('snapshot_id', ref('SnapshotId'));
const nexusId = path('nexus_id', uuid);
const childId = path('child_id', str);
const poolId = path('pool_id', ref('PoolId'));
const nodeId = path('node_id', ref('NodeId'));
const id = path('id', ref('NodeId'));
const replicaId = path('replica_id', uuid);
const paging = [query('max_entries', { ...int, default: 0 }, true), query('starting_token', int)];
const allowedHosts = query('allowed-hosts', { type: 'array', items: ref('HostNqn') });
const labelKv = [path('key'), path('value'), query('overwrite', bool)];
const NBD_SHARE =
  "storctl shares over NBD: 'nbd' is the protocol it serves; 'nvmf' and 'iscsi' are answered with InvalidArgument";

const nexusChildren = (prefix: string, params: Obj[]) => ({
  [`${prefix}/children`]: {
    get: op('Children', `get_${prefix.startsWith('/nodes') ? 'node_' : ''}nexus_children`, {
      params,
      ok: list('Child'),
    }),
  },
  [`${prefix}/children/{child_id}`]: {
    get: op('Children', `get_${prefix.startsWith('/nodes') ? 'node_' : ''}nexus_child`, {
      params: [...params, childId],
      ok: json(ref('Child')),
    }),
    put: op('Children', `put_${prefix.startsWith('/nodes') ? 'node_' : ''}nexus_child`, {
      params: [...params, childId],
      ok: json(ref('Child')),
    }),
    delete: op('Children', `del_${prefix.startsWith('/nodes') ? 'node_' : ''}nexus_child`, {
      params: [...params, childId],
    }),
  },
});

const replicaPaths = (prefix: string, params: Obj[], node: boolean) => {
  const n = node ? 'node_pool' : 'pool';
  return {
    [`${prefix}/replicas/{replica_id}`]: {
      ...(node
        ? {
            get: op('Replicas', 'get_node_pool_replica', {
              params: [...params, replicaId],
              ok: json(ref('Replica')),
            }),
          }
        : {}),
      put: op('Replicas', `put_${n}_replica`, {
        params: [...params, replicaId],
        body: 'CreateReplicaBody',
        ok: json(ref('Replica')),
      }),
      delete: op('Replicas', `del_${n}_replica`, { params: [...params, replicaId] }),
    },
    [`${prefix}/replicas/{replica_id}/share`]: {
      delete: op('Replicas', `del_${n}_replica_share`, { params: [...params, replicaId] }),
    },
    [`${prefix}/replicas/{replica_id}/share/{protocol}`]: {
      put: op('Replicas', `put_${n}_replica_share`, {
        params: [...params, replicaId, path('protocol', ref('ReplicaShareProtocol')), allowedHosts],
        ok: json(str),
        extra: ext(`Mayastor's path ends in the literal 'share/nvmf'; ${NBD_SHARE}`),
      }),
    },
  };
};

const paths: Obj = {
  '/api/spec': {
    get: op('Spec', 'get_api_spec', {
      ok: json({ type: 'object' }),
      extra: ext('this document; Mayastor serves its own document at the same path but does not describe it'),
    }),
  },
  // --- nexuses -----------------------------------------------------------------------------------------
  '/nexuses': { get: op('Nexuses', 'get_nexuses', { ok: list('Nexus') }) },
  '/nexuses/{nexus_id}': {
    get: op('Nexuses', 'get_nexus', { params: [nexusId], ok: json(ref('Nexus')) }),
    delete: op('Nexuses', 'del_nexus', { params: [nexusId] }),
  },
  ...nexusChildren('/nexuses/{nexus_id}', [nexusId]),
  '/nodes/{node_id}/nexuses/{nexus_id}': {
    get: op('Nexuses', 'get_node_nexus', { params: [nodeId, nexusId], ok: json(ref('Nexus')) }),
    put: op('Nexuses', 'put_node_nexus', {
      params: [nodeId, nexusId],
      body: 'CreateNexusBody',
      ok: json(ref('Nexus')),
    }),
    delete: op('Nexuses', 'del_node_nexus', { params: [nodeId, nexusId] }),
  },
  ...nexusChildren('/nodes/{node_id}/nexuses/{nexus_id}', [nodeId, nexusId]),
  '/nodes/{node_id}/nexuses/{nexus_id}/share': {
    delete: op('Nexuses', 'del_node_nexus_share', { params: [nodeId, nexusId] }),
  },
  '/nodes/{node_id}/nexuses/{nexus_id}/share/{protocol}': {
    put: op('Nexuses', 'put_node_nexus_share', {
      params: [nodeId, nexusId, path('protocol', ref('NexusShareProtocol'))],
      ok: json(str),
    }),
  },
  // --- nodes -------------------------------------------------------------------------------------------
  '/nodes': {
    get: op('Nodes', 'get_nodes', { params: [query('node_id', ref('NodeId'))], ok: list('Node') }),
  },
  '/nodes/{id}': { get: op('Nodes', 'get_node', { params: [id], ok: json(ref('Node')) }) },
  '/nodes/{id}/cordon/{label}': {
    put: op('Nodes', 'put_node_cordon', { params: [id, path('label')], ok: json(ref('Node')) }),
    delete: op('Nodes', 'delete_node_cordon', { params: [id, path('label')], ok: json(ref('Node')) }),
  },
  '/nodes/{id}/drain/{label}': {
    put: op('Nodes', 'put_node_drain', { params: [id, path('label')], ok: json(ref('Node')) }),
  },
  '/nodes/{id}/label/{key}={value}': {
    put: op('Nodes', 'put_node_label', { params: [id, ...labelKv], ok: json(ref('Node')) }),
  },
  '/nodes/{id}/label/{key}': {
    delete: op('Nodes', 'delete_node_label', { params: [id, path('key')], ok: json(ref('Node')) }),
  },
  '/nodes/{id}/nexuses': { get: op('Nexuses', 'get_node_nexuses', { params: [id], ok: list('Nexus') }) },
  '/nodes/{id}/pools': { get: op('Pools', 'get_node_pools', { params: [id], ok: list('Pool') }) },
  '/nodes/{id}/replicas': { get: op('Replicas', 'get_node_replicas', { params: [id], ok: list('Replica') }) },
  '/nodes/{node}/block_devices': {
    get: op('BlockDevices', 'get_node_block_devices', {
      params: [query('all', { type: 'boolean' }), path('node', ref('NodeId'))],
      ok: list('BlockDevice'),
    }),
  },
  '/nodes/{node}/jsongrpc/{method}': {
    put: op('JsonGrpc', 'put_node_jsongrpc', {
      params: [path('node', ref('NodeId')), path('method')],
      body: 'JsonGeneric',
      status: '501',
      ok: {
        description: 'storctl io-engines are not SPDK: they have no JSON-RPC to pass calls through to',
        content: { 'application/json': { schema: ref('RestJsonError') } },
      },
      extra: ext(
        "Mayastor passes the call through to the io-engine's SPDK JSON-RPC; storctl answers 501 Unimplemented",
      ),
    }),
  },
  // --- pools -------------------------------------------------------------------------------------------
  '/nodes/{node_id}/pools/{pool_id}': {
    get: op('Pools', 'get_node_pool', { params: [nodeId, poolId], ok: json(ref('Pool')) }),
    put: op('Pools', 'put_node_pool', {
      params: [nodeId, poolId],
      body: 'CreatePoolBody',
      ok: json(ref('Pool')),
    }),
    delete: op('Pools', 'del_node_pool', { params: [nodeId, poolId] }),
  },
  '/nodes/{node_id}/pools/{pool_id}/replicas': {
    get: op('Replicas', 'get_node_pool_replicas', { params: [nodeId, poolId], ok: list('Replica') }),
  },
  ...replicaPaths('/nodes/{node_id}/pools/{pool_id}', [nodeId, poolId], true),
  '/pools': {
    get: op('Pools', 'get_pools', { params: [query('volume_id', ref('VolumeId'))], ok: list('Pool') }),
  },
  '/pools/{pool_id}': {
    get: op('Pools', 'get_pool', { params: [poolId], ok: json(ref('Pool')) }),
    delete: op('Pools', 'del_pool', { params: [poolId] }),
  },
  '/pools/{pool_id}/label/{key}={value}': {
    put: op('Pools', 'put_pool_label', {
      params: [poolId, ...labelKv],
      ok: json(ref('Pool')),
      extra: {
        description:
          'Add a label to a pool (in later Mayastor revisions than the one this document follows).',
      },
    }),
  },
  '/pools/{pool_id}/label/{key}': {
    delete: op('Pools', 'del_pool_label', {
      params: [poolId, path('key')],
      ok: json(ref('Pool')),
      extra: {
        description:
          'Remove a label from a pool (in later Mayastor revisions than the one this document follows).',
      },
    }),
  },
  ...replicaPaths('/pools/{pool_id}', [poolId], false),
  // --- replicas and specs ------------------------------------------------------------------------------
  '/replicas': { get: op('Replicas', 'get_replicas', { ok: list('Replica') }) },
  '/replicas/{id}': {
    get: op('Replicas', 'get_replica', { params: [path('id', uuid)], ok: json(ref('Replica')) }),
  },
  '/specs': { get: op('Specs', 'get_specs', { ok: json(ref('Specs')) }) },
  // --- volumes -----------------------------------------------------------------------------------------
  '/volumes': {
    get: op('Volumes', 'get_volumes', {
      params: [query('volume_id', ref('VolumeId')), ...paging],
      ok: json(ref('Volumes')),
    }),
  },
  '/volumes/{volume_id}': {
    get: op('Volumes', 'get_volume', { params: [volumeId], ok: json(ref('Volume')) }),
    put: op('Volumes', 'put_volume', {
      params: [volumeId],
      body: 'CreateVolumeBody',
      ok: json(ref('Volume')),
    }),
    delete: op('Volumes', 'del_volume', {
      params: [
        volumeId,
        {
          ...query('if_unpublished', bool),
          ...ext(
            'true: refuse (409 InUse, details VolumePublished) while the volume is published, checked atomically',
          ),
        },
      ],
    }),
  },
  '/volumes/{volume_id}/rebuild-history': {
    get: op('Volumes', 'get_rebuild_history', { params: [volumeId], ok: json(ref('RebuildHistory')) }),
  },
  '/volumes/{volume_id}/replica_count/{replica_count}': {
    put: op('Volumes', 'put_volume_replica_count', {
      params: [
        volumeId,
        path('replica_count', { type: 'integer', format: 'uint8', minimum: 1, maximum: 255 }),
      ],
      ok: json(ref('Volume')),
    }),
  },
  '/volumes/{volume_id}/property': {
    put: op('Volumes', 'put_volume_property', {
      params: [volumeId],
      body: 'SetVolumePropertyBody',
      ok: json(ref('Volume')),
    }),
  },
  '/volumes/{volume_id}/target': {
    put: op('Volumes', 'put_volume_target', {
      params: [volumeId],
      body: 'PublishVolumeBody',
      ok: json(ref('Volume')),
    }),
    delete: op('Volumes', 'del_volume_target', {
      params: [volumeId, query('force', bool)],
      ok: json(ref('Volume')),
    }),
  },
  '/volumes/{volume_id}/size': {
    put: op('Volumes', 'put_volume_size', {
      params: [volumeId],
      body: 'ResizeVolumeBody',
      ok: json(ref('Volume')),
    }),
  },
  '/volumes/{volume_id}/shutdown_targets': {
    delete: op('Volumes', 'del_volume_shutdown_targets', { params: [volumeId] }),
  },
  '/volumes/{volume_id}/share/{protocol}': {
    put: op('Volumes', 'put_volume_share', {
      params: [volumeId, path('protocol', ref('VolumeShareProtocol')), query('frontend_host', str)],
      ok: json(str),
    }),
  },
  '/volumes{volume_id}/share': {
    delete: op('Volumes', 'del_share', {
      params: [volumeId],
      extra: { description: "Unshare a volume, at the path as Mayastor's document spells it (no '/')." },
    }),
  },
  '/volumes/{volume_id}/share': {
    delete: op('Volumes', 'del_volume_share', {
      params: [volumeId],
      extra: ext("unshare a volume at the path with the '/' that Mayastor's document misses"),
    }),
  },
  '/volumes/{volume_id}/snapshots/{snapshot_id}': {
    get: op('Snapshots', 'get_volume_snapshot', {
      params: [volumeId, snapshotId],
      ok: json(ref('VolumeSnapshot')),
    }),
    put: op('Snapshots', 'put_volume_snapshot', {
      params: [volumeId, snapshotId],
      ok: json(ref('VolumeSnapshot')),
    }),
    delete: op('Snapshots', 'del_volume_snapshot', { params: [volumeId, snapshotId] }),
  },
  '/volumes/{volume_id}/snapshots': {
    get: op('Snapshots', 'get_volume_snapshots', {
      params: [volumeId, ...paging],
      ok: json(ref('VolumeSnapshots')),
    }),
  },
  '/volumes/snapshots/{snapshot_id}': {
    get: op('Snapshots', 'get_volumes_snapshot', { params: [snapshotId], ok: json(ref('VolumeSnapshot')) }),
    delete: op('Snapshots', 'del_snapshot', { params: [snapshotId] }),
  },
  '/volumes/snapshots': {
    get: op('Snapshots', 'get_volumes_snapshots', {
      params: [query('snapshot_id', ref('SnapshotId')), query('volume_id', ref('VolumeId')), ...paging],
      ok: json(ref('VolumeSnapshots')),
    }),
  },
  '/snapshots/{snapshot_id}/volumes/{volume_id}': {
    put: op('Volumes', 'put_snapshot_volume', {
      params: [snapshotId, volumeId],
      body: 'CreateVolumeBody',
      ok: json(ref('Volume')),
    }),
  },
  // --- watches and app nodes ---------------------------------------------------------------------------
  '/watches/volumes/{volume_id}': {
    get: op('Watches', 'get_watch_volume', { params: [volumeId], ok: list('RestWatch') }),
    put: op('Watches', 'put_watch_volume', {
      params: [volumeId, query('callback', { type: 'string', format: 'uri' }, true)],
    }),
    delete: op('Watches', 'del_watch_volume', {
      params: [volumeId, query('callback', { type: 'string', format: 'uri' }, true)],
    }),
  },
  '/app-nodes': { get: op('AppNodes', 'get_app_nodes', { params: paging, ok: json(ref('AppNodes')) }) },
  '/app-nodes/{app_node_id}': {
    get: op('AppNodes', 'get_app_node', {
      params: [path('app_node_id', ref('AppNodeId'))],
      ok: json(ref('AppNode')),
    }),
    put: op('AppNodes', 'register_app_node', {
      params: [path('app_node_id', ref('AppNodeId'))],
      body: 'RegisterAppNode',
    }),
    delete: op('AppNodes', 'deregister_app_node', { params: [path('app_node_id', ref('AppNodeId'))] }),
  },
};

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('RestJsonError') } },
});

/** The document, as `GET /v0/api/spec` serves it. */
export const openApiDocument = {
  openapi: '3.0.3',
  info: {
    title: 'IoEngine RESTful API',
    version: 'v0',
    description:
      "storctl core's REST API v0: Mayastor's v0 API for what storctl serves; storctl's deliberate differences carry x-storctl-extension.",
  },
  servers: [{ url: '/v0' }],
  paths,
  components: {
    schemas,
    responses: {
      ClientError: errorResponse('Client side error'),
      ServerError: errorResponse('Server side error'),
    },
  },
} as const;
