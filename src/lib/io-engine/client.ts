import * as grpc from '@grpc/grpc-js';
import { plainGrpcDetail } from '../errors.js';
import { CLIENT_CHANNEL_OPTIONS } from '../grpc/client.js';
import { loadProto, lookupService } from '../grpc/proto.js';
import type { BlockDevice } from '../rest/types.js';
import type {
  CreateNexusOptions,
  Nexus,
  NodeInfo,
  Pool,
  RebuildHistoryRecord,
  Replica,
  ReplicaSnapshot,
} from './types.js';

export type { BlockDevice } from '../rest/types.js';
export * from './types.js';

/** A failed io-engine call: the gRPC status code (NOT_FOUND, ALREADY_EXISTS, …) and the server's message. */
export class IoEngineError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
    readonly endpoint: string,
    readonly method: string,
  ) {
    super(message);
    this.name = 'IoEngineError';
  }
  get codeName(): string {
    return grpc.status[this.code] ?? String(this.code);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: raw proto-loader objects, converted right here
type Raw = Record<string, any>;
const num = (v: unknown) => Number(v ?? 0);

const toPool = (p: Raw): Pool => ({
  name: p.name,
  uuid: p.uuid,
  disk: p.disk,
  capacity: num(p.capacity),
  used: num(p.used),
  committed: num(p.committed),
  free: num(p.free),
  state: p.state,
  stateReason: p.state_reason ?? '',
  replicaCount: p.replica_count,
  snapshotCount: p.snapshot_count,
});
const toReplica = (r: Raw): Replica => ({
  uuid: r.uuid,
  name: r.name,
  pool: r.pool,
  poolUuid: r.pool_uuid,
  size: num(r.size),
  thin: r.thin,
  share: r.share,
  uri: r.uri,
  allocated: num(r.allocated),
  snapshotSource: r.snapshot_source,
});
const toSnapshot = (s: Raw): ReplicaSnapshot => ({
  uuid: s.uuid,
  name: s.name,
  replicaUuid: s.replica_uuid,
  pool: s.pool,
  size: num(s.size),
  allocated: num(s.allocated),
  createdAt: s.created_at,
  reflink: s.reflink,
});
const toNexus = (n: Raw): Nexus => ({
  uuid: n.uuid,
  name: n.name,
  size: num(n.size),
  state: n.state,
  children: (n.children ?? []).map((c: Raw) => ({
    uri: c.uri,
    uuid: c.uuid,
    state: c.state,
    reason: c.reason,
    rebuildProgress: c.rebuild_progress,
    rebuiltBytes: num(c.rebuilt_bytes),
    rebuildTransferredBytes: num(c.rebuild_transferred_bytes),
    rebuildPartial: c.rebuild_partial === true,
    faultedAt: num(c.faulted_at_ms) || null,
    rebuildStartedAt: num(c.rebuild_started_at_ms) || null,
    rebuildEndedAt: num(c.rebuild_ended_at_ms) || null,
  })),
  share: n.share,
  deviceUri: n.device_uri,
  volumeId: n.volume_id,
  nexusInfoKey: n.nexus_info_key,
  rebuilds: n.rebuilds,
  shutdownReason: n.shutdown_reason ?? '',
});
// The proto's BlockDevice carries Mayastor's REST fields as they are; only numbers and absent parts change.
const toBlockDevice = (d: Raw): BlockDevice => ({
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
});

export interface CreateReplicaOptions {
  uuid: string;
  pool: string;
  size: number;
  thin?: boolean;
  share?: 'none' | 'nbd';
  name?: string;
}

const createReplicaRequest = (o: CreateReplicaOptions): Raw => ({
  uuid: o.uuid,
  pool: o.pool,
  size: String(o.size),
  thin: o.thin ?? false,
  share: o.share ?? 'none',
  name: o.name ?? '',
});

let serviceCtor: grpc.ServiceClientConstructor | null = null;

/**
 * Listings other than ListReplicas answer in one message, and an io-engine older than paged
 * ListReplicas answers that in one too: 33k replicas are ~8 MB, past gRPC's default 4 MB receive
 * limit, so core could not poll a node holding that many. 512 MiB holds millions.
 */
const MAX_LISTING_BYTES = 512 * 1024 * 1024;
/** Replicas per ListReplicas page: ~0.5 MB, a few ms to decode. */
const REPLICA_PAGE = 2000;

/**
 * Typed client of one io-engine's gRPC API (service storctl.io_engine.v1.IoEngine). Every call has a
 * deadline; failures are IoEngineError with the server's status code and message.
 */
export class IoEngineClient {
  private readonly client: grpc.Client;

  constructor(
    readonly endpoint: string,
    private readonly options: { deadlineMs?: number } = {},
  ) {
    serviceCtor ??= lookupService(loadProto('io_engine.proto'), 'storctl.io_engine.v1.IoEngine');
    this.client = new serviceCtor(endpoint, grpc.credentials.createInsecure(), {
      ...CLIENT_CHANNEL_OPTIONS,
      'grpc.max_receive_message_length': MAX_LISTING_BYTES,
    });
  }

  private call(method: string, request: Raw, deadlineMs = this.options.deadlineMs ?? 30_000): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const fn = (this.client as unknown as Record<string, (...a: unknown[]) => void>)[method].bind(
        this.client,
      );
      fn(request, { deadline: Date.now() + deadlineMs }, (err: grpc.ServiceError | null, res: Raw) => {
        if (err)
          reject(
            new IoEngineError(err.code, plainGrpcDetail(err.details || err.message), this.endpoint, method),
          );
        else resolve(res);
      });
    });
  }

  async getNodeInfo(): Promise<NodeInfo> {
    const r = await this.call('GetNodeInfo', {});
    return {
      nodeId: r.node_id,
      grpcEndpoint: r.grpc_endpoint,
      nbdEndpoint: r.nbd_endpoint,
      version: r.version,
      startedAt: r.started_at,
    };
  }

  async createPool(o: { name: string; capacity: number; disk?: string }): Promise<Pool> {
    return toPool(
      await this.call('CreatePool', { name: o.name, capacity: String(o.capacity), disk: o.disk ?? '' }),
    );
  }
  async importPool(o: { name: string; disk?: string }): Promise<Pool> {
    return toPool(await this.call('ImportPool', { name: o.name, disk: o.disk ?? '' }));
  }
  async destroyPool(name: string): Promise<void> {
    await this.call('DestroyPool', { name });
  }
  async exportPool(name: string): Promise<void> {
    await this.call('ExportPool', { name });
  }
  async getPool(name: string): Promise<Pool> {
    return toPool(await this.call('GetPool', { name }));
  }
  async listPools(): Promise<Pool[]> {
    return ((await this.call('ListPools', {})).pools ?? []).map(toPool);
  }

  async createReplica(o: CreateReplicaOptions): Promise<Replica> {
    return toReplica(await this.call('CreateReplica', createReplicaRequest(o)));
  }
  /**
   * Several creates in one call; each result is the Replica or the IoEngineError its own
   * CreateReplica would have given. The call itself rejects only as a whole (deadline, transport).
   */
  async createReplicas(items: CreateReplicaOptions[]): Promise<(Replica | IoEngineError)[]> {
    const res = await this.call('CreateReplicas', { replicas: items.map(createReplicaRequest) });
    return (res.results ?? []).map((r: Raw) =>
      r.replica
        ? toReplica(r.replica)
        : new IoEngineError(
            r.error?.code ?? grpc.status.UNKNOWN,
            r.error?.message ?? '',
            this.endpoint,
            'CreateReplica',
          ),
    );
  }
  /** With `pool`, a pool not imported answers UNAVAILABLE instead of NOT_FOUND. */
  async destroyReplica(uuid: string, pool = ''): Promise<void> {
    await this.call('DestroyReplica', { uuid, pool });
  }
  async resizeReplica(uuid: string, size: number): Promise<Replica> {
    return toReplica(await this.call('ResizeReplica', { uuid, size: String(size) }));
  }
  async shareReplica(uuid: string): Promise<Replica> {
    return toReplica(await this.call('ShareReplica', { uuid, protocol: 'nbd' }));
  }
  async unshareReplica(uuid: string): Promise<Replica> {
    return toReplica(await this.call('UnshareReplica', { uuid }));
  }
  async getReplica(uuid: string): Promise<Replica> {
    return toReplica(await this.call('GetReplica', { uuid }));
  }
  /**
   * Every replica (of `pool`), read REPLICA_PAGE at a time: a node's whole listing in one message
   * held core's event loop ~0.2 s per node at 33k replicas, and the io-engine's while it encoded
   * it. A listing that changed under its token is read again from the start (ABORTED), twice at most.
   */
  async listReplicas(pool?: string): Promise<Replica[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const replicas: Replica[] = [];
        let token = '';
        do {
          const r = await this.call('ListReplicas', {
            pool: pool ?? '',
            max_entries: REPLICA_PAGE,
            starting_token: token,
          });
          for (const raw of r.replicas ?? []) replicas.push(toReplica(raw));
          token = r.next_token ?? '';
        } while (token);
        return replicas;
      } catch (err) {
        if (attempt < 3 && err instanceof IoEngineError && err.code === grpc.status.ABORTED) continue;
        throw err;
      }
    }
  }

  async createReplicaSnapshot(o: {
    replicaUuid: string;
    snapshotUuid: string;
    name?: string;
  }): Promise<ReplicaSnapshot> {
    return toSnapshot(
      await this.call('CreateReplicaSnapshot', {
        replica_uuid: o.replicaUuid,
        snapshot_uuid: o.snapshotUuid,
        name: o.name ?? '',
      }),
    );
  }
  /** With `pool`, a pool not imported answers UNAVAILABLE instead of NOT_FOUND. */
  async destroyReplicaSnapshot(uuid: string, pool = ''): Promise<void> {
    await this.call('DestroyReplicaSnapshot', { uuid, pool });
  }
  async listReplicaSnapshots(replicaUuid?: string): Promise<ReplicaSnapshot[]> {
    return (
      (await this.call('ListReplicaSnapshots', { replica_uuid: replicaUuid ?? '' })).snapshots ?? []
    ).map(toSnapshot);
  }
  async createSnapshotClone(o: { snapshotUuid: string; cloneUuid: string; name?: string }): Promise<Replica> {
    return toReplica(
      await this.call('CreateSnapshotClone', {
        snapshot_uuid: o.snapshotUuid,
        clone_uuid: o.cloneUuid,
        name: o.name ?? '',
      }),
    );
  }

  async createNexus(o: CreateNexusOptions): Promise<Nexus> {
    return toNexus(
      await this.call('CreateNexus', {
        uuid: o.uuid,
        name: o.name ?? '',
        size: String(o.size),
        children: o.children,
        volume_id: o.volumeId ?? '',
        nexus_info_key: o.nexusInfoKey ?? '',
      }),
    );
  }
  async destroyNexus(uuid: string): Promise<void> {
    await this.call('DestroyNexus', { uuid });
  }
  async shutdownNexus(uuid: string): Promise<Nexus> {
    return toNexus(await this.call('ShutdownNexus', { uuid }));
  }
  /** Share the nexus; the engine refuses protocols other than nbd. */
  async publishNexus(uuid: string, protocol = 'nbd'): Promise<Nexus> {
    return toNexus(await this.call('PublishNexus', { uuid, protocol }));
  }
  async unpublishNexus(uuid: string): Promise<Nexus> {
    return toNexus(await this.call('UnpublishNexus', { uuid }));
  }
  async addChildNexus(uuid: string, uri: string): Promise<Nexus> {
    return toNexus(await this.call('AddChildNexus', { uuid, uri }));
  }
  async removeChildNexus(uuid: string, uri: string): Promise<Nexus> {
    return toNexus(await this.call('RemoveChildNexus', { uuid, uri }));
  }
  async faultNexusChild(uuid: string, uri: string): Promise<Nexus> {
    return toNexus(await this.call('FaultNexusChild', { uuid, uri }));
  }
  /** Grow a nexus whose children already hold `size` bytes; connected NBD clients keep the old size. */
  async resizeNexus(uuid: string, size: number): Promise<Nexus> {
    return toNexus(await this.call('ResizeNexus', { uuid, size: String(size) }));
  }
  /** Hold a nexus's I/O until released (or `timeoutMs` passes); the hold's id. */
  async holdNexusIo(uuid: string, timeoutMs: number): Promise<string> {
    return (await this.call('HoldNexusIo', { uuid, timeout_ms: timeoutMs })).hold_id;
  }
  /** End an I/O hold; NOT_FOUND when it already ended by its timeout. */
  async releaseNexusIo(uuid: string, holdId: string): Promise<void> {
    await this.call('ReleaseNexusIo', { uuid, hold_id: holdId });
  }
  async getNexus(uuid: string): Promise<Nexus> {
    return toNexus(await this.call('GetNexus', { uuid }));
  }
  async listNexuses(): Promise<Nexus[]> {
    return ((await this.call('ListNexuses', {})).nexuses ?? []).map(toNexus);
  }
  /** Finished rebuilds of a nexus's children, oldest first. */
  async getRebuildHistory(uuid: string): Promise<RebuildHistoryRecord[]> {
    const r = await this.call('GetRebuildHistory', { uuid });
    return (r.records ?? []).map((h: Raw) => ({
      childUri: h.child_uri,
      srcUri: h.src_uri,
      state: h.state,
      blocksTotal: num(h.blocks_total),
      blocksRecovered: num(h.blocks_recovered),
      blocksTransferred: num(h.blocks_transferred),
      blocksRemaining: num(h.blocks_remaining),
      blockSize: num(h.block_size),
      isPartial: h.is_partial === true,
      startTime: h.start_time,
      endTime: h.end_time,
    }));
  }

  /** The node's block devices; `all` false lists only the available ones. */
  async listBlockDevices(all = false): Promise<BlockDevice[]> {
    return ((await this.call('ListBlockDevices', { all })).devices ?? []).map(toBlockDevice);
  }

  close(): void {
    this.client.close();
  }
}
