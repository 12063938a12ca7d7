import * as grpc from '@grpc/grpc-js';
import { loadProto, lookupService } from '../../lib/grpc/proto.js';
import type {
  BlockDeviceState,
  ChildState,
  EngineApi,
  NexusState,
  PoolState,
  ReplicaState,
  SnapshotState,
} from './engine-api.js';
import type { EngineFactory } from './engines.js';

const SERVICE = 'storctl.io_engine.v1.IoEngine';
let ctor: grpc.ServiceClientConstructor | null = null;

// biome-ignore lint/suspicious/noExplicitAny: proto-loader messages are plain objects mapped below
type Msg = Record<string, any>;

const num = (v: unknown) => Number(v ?? 0);

const pool = (p: Msg): PoolState => ({
  id: p.name,
  disk: p.disk,
  capacity: num(p.capacity),
  used: num(p.used),
  status: (p.state || 'Unknown') as PoolState['status'],
});
const replica = (r: Msg): ReplicaState => ({
  uuid: r.uuid,
  pool: r.pool,
  size: num(r.size),
  thin: !!r.thin,
  share: r.share || 'none',
  uri: r.uri,
  allocated: num(r.allocated),
});
const nexus = (n: Msg): NexusState => ({
  uuid: n.uuid,
  size: num(n.size),
  state: n.state,
  deviceUri: n.device_uri ?? '',
  protocol: n.share || 'none',
  children: (n.children ?? []).map(
    (c: Msg): ChildState => ({
      uri: c.uri,
      state: c.state,
      rebuildProgress: c.state === 'Degraded' ? num(c.rebuild_progress) : null,
    }),
  ),
});

/** EngineApi over the io-engine gRPC service (proto/io_engine.proto), one channel per node. */
export class GrpcEngine implements EngineApi {
  private client: grpc.Client;

  constructor(
    readonly nodeId: string,
    endpoint: string,
    private readonly timeoutMs: number,
  ) {
    ctor ??= lookupService(loadProto('io_engine.proto'), SERVICE);
    this.client = new ctor(endpoint, grpc.credentials.createInsecure());
  }

  private call(method: string, req: Msg): Promise<Msg> {
    return new Promise((resolve, reject) => {
      // biome-ignore lint/suspicious/noExplicitAny: dynamic method lookup on the generated client
      (this.client as any)[method](
        req,
        { deadline: Date.now() + this.timeoutMs },
        (err: grpc.ServiceError | null, res: Msg) => {
          if (err) reject(Object.assign(err, { details: `io-engine ${this.nodeId}: ${err.details}` }));
          else resolve(res);
        },
      );
    });
  }

  async listPools(): Promise<PoolState[]> {
    return ((await this.call('ListPools', {})).pools ?? []).map(pool);
  }
  async createPool(id: string, disk: string, capacity = 0) {
    return pool(await this.call('CreatePool', { name: id, disk, capacity: String(capacity) }));
  }
  async importPool(id: string, disk: string) {
    return pool(await this.call('ImportPool', { name: id, disk }));
  }
  async destroyPool(id: string) {
    await this.call('DestroyPool', { name: id });
  }
  async listReplicas(): Promise<ReplicaState[]> {
    return ((await this.call('ListReplicas', {})).replicas ?? []).map(replica);
  }
  async createReplica(r: { uuid: string; pool: string; size: number; thin: boolean }) {
    return replica(
      await this.call('CreateReplica', {
        uuid: r.uuid,
        name: r.uuid,
        pool: r.pool,
        size: String(r.size),
        thin: r.thin,
      }),
    );
  }
  async destroyReplica(uuid: string) {
    await this.call('DestroyReplica', { uuid });
  }
  async shareReplica(uuid: string) {
    return (await this.call('ShareReplica', { uuid, protocol: 'nbd' })).uri as string;
  }
  localReplicaUri(uuid: string) {
    return `bdev:///${uuid}?uuid=${uuid}`;
  }
  async resizeReplica(uuid: string, size: number) {
    await this.call('ResizeReplica', { uuid, size: String(size) });
  }
  async listNexuses(): Promise<NexusState[]> {
    return ((await this.call('ListNexuses', {})).nexuses ?? []).map(nexus);
  }
  async getNexus(uuid: string) {
    return nexus(await this.call('GetNexus', { uuid }));
  }
  async createNexus(n: {
    uuid: string;
    size: number;
    children: string[];
    nexusInfoKey: string;
    volumeId?: string;
  }) {
    return nexus(
      await this.call('CreateNexus', {
        uuid: n.uuid,
        size: String(n.size),
        children: n.children,
        nexus_info_key: n.nexusInfoKey,
        volume_id: n.volumeId ?? '',
      }),
    );
  }
  async destroyNexus(uuid: string) {
    await this.call('DestroyNexus', { uuid });
  }
  async publishNexus(uuid: string, protocol: string) {
    return (await this.call('PublishNexus', { uuid, protocol })).device_uri as string;
  }
  async unpublishNexus(uuid: string) {
    await this.call('UnpublishNexus', { uuid });
  }
  async addChild(uuid: string, uri: string) {
    return nexus(await this.call('AddChildNexus', { uuid, uri }));
  }
  async removeChild(uuid: string, uri: string) {
    await this.call('RemoveChildNexus', { uuid, uri });
  }
  async resizeNexus(_uuid: string, _size: number): Promise<void> {
    // The io-engine API has no ResizeNexus: a nexus picks up its children's size when recreated.
    const { SvcError } = await import('./svc-error.js');
    throw new SvcError(
      'Unimplemented',
      'the io-engine cannot resize a live nexus; unpublish, resize, publish again',
    );
  }
  async createReplicaSnapshot(
    replicaUuid: string,
    snapshotUuid: string,
    name: string,
  ): Promise<SnapshotState> {
    const s = await this.call('CreateReplicaSnapshot', {
      replica_uuid: replicaUuid,
      snapshot_uuid: snapshotUuid,
      name,
    });
    return { uuid: s.uuid, replicaUuid: s.replica_uuid, name: s.name, size: num(s.size) };
  }
  async createSnapshotClone(snapshotUuid: string, cloneUuid: string): Promise<ReplicaState> {
    return replica(
      await this.call('CreateSnapshotClone', {
        snapshot_uuid: snapshotUuid,
        clone_uuid: cloneUuid,
        name: cloneUuid,
      }),
    );
  }
  async destroyReplicaSnapshot(uuid: string) {
    await this.call('DestroyReplicaSnapshot', { uuid });
  }
  close() {
    this.client.close();
  }
  async unshareReplica(uuid: string) {
    await this.call('UnshareReplica', { uuid });
  }
  async listBlockDevices(all: boolean): Promise<BlockDeviceState[]> {
    return ((await this.call('ListBlockDevices', { all })).devices ?? []).map(
      (d: Msg): BlockDeviceState => ({
        devname: d.devname,
        devtype: d.devtype,
        devmajor: num(d.devmajor),
        devminor: num(d.devminor),
        model: d.model ?? '',
        devpath: d.devpath ?? '',
        devlinks: d.devlinks ?? [],
        size: num(d.size),
        partition: d.partition ? { ...d.partition, number: num(d.partition.number) } : undefined,
        filesystem: d.filesystem ?? undefined,
        available: !!d.available,
        connection_type: d.connection_type ?? '',
        is_rotational: !!d.is_rotational,
      }),
    );
  }
}

export function grpcEngineFactory(timeoutMs: number): EngineFactory {
  return (nodeId, endpoint) => new GrpcEngine(nodeId, endpoint, timeoutMs);
}
