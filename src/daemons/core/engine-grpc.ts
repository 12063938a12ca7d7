import { status } from '@grpc/grpc-js';
import { CallBatcher } from '../../lib/io-engine/call-batcher.js';
import {
  type CreateReplicaOptions,
  IoEngineClient,
  IoEngineError,
  type Nexus,
  type Pool,
  type Replica,
} from '../../lib/io-engine/client.js';
import type { EngineApi, NexusState, PoolState, ReplicaState, SnapshotState } from './engine-api.js';
import type { EngineFactory } from './engines.js';

const pool = (p: Pool): PoolState => ({
  id: p.name,
  uuid: p.uuid,
  disk: p.disk,
  capacity: p.capacity,
  used: p.used,
  free: p.free,
  status: (p.state || 'Unknown') as PoolState['status'],
  reason: p.stateReason || undefined,
});
const replica = (r: Replica): ReplicaState => ({
  uuid: r.uuid,
  pool: r.pool,
  size: r.size,
  thin: r.thin,
  share: r.share || 'none',
  uri: r.uri,
  allocated: r.allocated,
});
const nexus = (n: Nexus): NexusState => ({
  uuid: n.uuid,
  size: n.size,
  state: n.state,
  deviceUri: n.deviceUri,
  protocol: n.share || 'none',
  children: n.children.map((c) => ({
    uri: c.uri,
    state: c.state,
    rebuildProgress: c.state === 'Degraded' ? c.rebuildProgress : null,
    rebuildPartial: c.rebuildPartial,
    rebuildTransferredBytes: c.rebuildTransferredBytes,
    faultedAt: c.faultedAt,
    reason: c.state === 'Faulted' && c.reason ? c.reason : undefined,
    rebuildStartedAt: c.rebuildStartedAt,
    rebuildEndedAt: c.rebuildEndedAt,
  })),
  shutdownReason: n.shutdownReason || undefined,
});

/**
 * EngineApi over the io-engine client, one channel per node: core's names and shapes, and failures
 * that toSvcError maps by their gRPC code, with details naming the node.
 */
export class GrpcEngine implements EngineApi {
  private readonly client: IoEngineClient;
  /** Concurrent replica creates for this node go out as one CreateReplicas call. */
  private readonly creates = new CallBatcher<CreateReplicaOptions, Replica>((items) =>
    this.sendCreates(items),
  );
  private batchCreates = true;

  constructor(
    readonly nodeId: string,
    endpoint: string,
    timeoutMs: number,
  ) {
    this.client = new IoEngineClient(endpoint, { deadlineMs: timeoutMs });
  }

  private async call<T>(request: (client: IoEngineClient) => Promise<T>): Promise<T> {
    try {
      return await request(this.client);
    } catch (err) {
      // The message names the node: the REST answer (toSvcError) and logs show which io-engine said it.
      if (err instanceof IoEngineError)
        throw new IoEngineError(
          err.code,
          `io-engine ${this.nodeId}: ${err.message}`,
          err.endpoint,
          err.method,
        );
      throw err;
    }
  }

  async listPools() {
    return (await this.call((c) => c.listPools())).map(pool);
  }
  async createPool(id: string, disk: string, capacity = 0) {
    return pool(await this.call((c) => c.createPool({ name: id, disk, capacity })));
  }
  async importPool(id: string, disk: string) {
    return pool(await this.call((c) => c.importPool({ name: id, disk })));
  }
  async destroyPool(id: string) {
    await this.call((c) => c.destroyPool(id));
  }
  async listReplicas() {
    return (await this.call((c) => c.listReplicas())).map(replica);
  }
  async getReplica(uuid: string) {
    return replica(await this.call((c) => c.getReplica(uuid)));
  }
  async createReplica(r: { uuid: string; pool: string; size: number; thin: boolean }) {
    const { uuid, size, thin } = r;
    return replica(await this.call(() => this.creates.call({ uuid, name: uuid, pool: r.pool, size, thin })));
  }
  private async sendCreates(items: CreateReplicaOptions[]): Promise<(Replica | Error)[]> {
    const oneByOne = () => Promise.all(items.map((i) => this.client.createReplica(i).catch((e: Error) => e)));
    if (items.length === 1 || !this.batchCreates) return oneByOne();
    try {
      return await this.client.createReplicas(items);
    } catch (err) {
      // An io-engine of an older version: it has only the single create.
      if (!(err instanceof IoEngineError && err.code === status.UNIMPLEMENTED)) throw err;
      this.batchCreates = false;
      return oneByOne();
    }
  }
  async destroyReplica(uuid: string, pool: string) {
    await this.call((c) => c.destroyReplica(uuid, pool));
  }
  async shareReplica(uuid: string) {
    return (await this.call((c) => c.shareReplica(uuid))).uri;
  }
  async unshareReplica(uuid: string) {
    await this.call((c) => c.unshareReplica(uuid));
  }
  async resizeReplica(uuid: string, size: number) {
    await this.call((c) => c.resizeReplica(uuid, size));
  }
  async listNexuses() {
    return (await this.call((c) => c.listNexuses())).map(nexus);
  }
  async getNexus(uuid: string) {
    return nexus(await this.call((c) => c.getNexus(uuid)));
  }
  async createNexus(n: {
    uuid: string;
    size: number;
    children: string[];
    nexusInfoKey: string;
    volumeId?: string;
  }) {
    const { uuid, size, children, nexusInfoKey, volumeId } = n;
    return nexus(await this.call((c) => c.createNexus({ uuid, size, children, nexusInfoKey, volumeId })));
  }
  async destroyNexus(uuid: string) {
    await this.call((c) => c.destroyNexus(uuid));
  }
  async publishNexus(uuid: string, protocol: string) {
    return (await this.call((c) => c.publishNexus(uuid, protocol))).deviceUri;
  }
  async unpublishNexus(uuid: string) {
    await this.call((c) => c.unpublishNexus(uuid));
  }
  async addChild(uuid: string, uri: string) {
    return nexus(await this.call((c) => c.addChildNexus(uuid, uri)));
  }
  async removeChild(uuid: string, uri: string) {
    await this.call((c) => c.removeChildNexus(uuid, uri));
  }
  async resizeNexus(uuid: string, size: number): Promise<void> {
    await this.call((c) => c.resizeNexus(uuid, size));
  }
  holdNexusIo(uuid: string, timeoutMs: number): Promise<string> {
    return this.call((c) => c.holdNexusIo(uuid, timeoutMs));
  }
  async releaseNexusIo(uuid: string, holdId: string): Promise<void> {
    await this.call((c) => c.releaseNexusIo(uuid, holdId));
  }
  async createReplicaSnapshot(
    replicaUuid: string,
    snapshotUuid: string,
    name: string,
  ): Promise<SnapshotState> {
    const s = await this.call((c) => c.createReplicaSnapshot({ replicaUuid, snapshotUuid, name }));
    return { uuid: s.uuid, replicaUuid: s.replicaUuid, name: s.name, size: s.size, allocated: s.allocated };
  }
  async createSnapshotClone(snapshotUuid: string, cloneUuid: string) {
    return replica(
      await this.call((c) => c.createSnapshotClone({ snapshotUuid, cloneUuid, name: cloneUuid })),
    );
  }
  async destroyReplicaSnapshot(uuid: string, pool: string) {
    await this.call((c) => c.destroyReplicaSnapshot(uuid, pool));
  }
  async listBlockDevices(all: boolean) {
    return this.call((c) => c.listBlockDevices(all));
  }
  close() {
    this.client.close();
  }
}

export function grpcEngineFactory(timeoutMs: number): EngineFactory {
  return (nodeId, endpoint) => new GrpcEngine(nodeId, endpoint, timeoutMs);
}
