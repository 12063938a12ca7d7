import { stat } from 'node:fs/promises';
import type * as grpc from '@grpc/grpc-js';
import { toServiceError, unary } from '../../lib/grpc/status.js';
import { TimeSlice } from '../../lib/time-slice.js';
import { listBlockDevices } from './block-devices.js';
import type { Engine } from './engine.js';
import { alreadyExists, checkName, checkSize, invalid, notFound } from './errors.js';
import { listingPage, ReplicaList } from './listing-page.js';
import type { Nexus } from './nexus.js';
import { NexusIoHolds } from './nexus-holds.js';
import type { Pool } from './pool.js';
import { POOL_ERROR_WINDOW_MS } from './pool-io-errors.js';
import type { Replica } from './replica.js';

// biome-ignore lint/suspicious/noExplicitAny: proto-loader requests are plain objects checked below
type Req = Record<string, any>;

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** Items of one CreateReplicas call: bounds the work one request can queue. */
const MAX_BATCH = 256;
/** Rebuild history counts blocks of this size (the nexus block size Mayastor reports). */
const REBUILD_BLOCK = 512;

export interface NodeIdentity {
  nodeId: string;
  grpcEndpoint: string;
  nbdEndpoint: string;
  version: string;
  startedAt: string;
}

async function poolMsg(p: Pool) {
  const s = await p.stats();
  const diskError = p.ioErrors.recent();
  return {
    name: p.name,
    uuid: p.uuid,
    disk: p.disk,
    capacity: String(s.capacity),
    used: String(s.used),
    committed: String(s.committed),
    free: String(s.free),
    state: diskError ? 'Degraded' : 'Online',
    state_reason: diskError
      ? `its disk failed I/O: ${diskError}; Degraded until ${POOL_ERROR_WINDOW_MS / 60_000} min pass without another`
      : '',
    replica_count: p.replicas.size,
    snapshot_count: p.snapshots.length,
  };
}

/** The IoEngine gRPC service: validates requests, runs them on the engine, renders replies. */
export function ioEngineHandlers(engine: Engine, identity: NodeIdentity): grpc.UntypedServiceImplementation {
  /** A replica as the wire has it; its allocation from a stat of its file, on this thread. */
  const replicaMsg = (r: Replica, knownAllocated?: number) => {
    const allocated = knownAllocated ?? r.allocatedBytes();
    const pool = engine.pools.get(r.poolName);
    return {
      uuid: r.uuid,
      name: r.meta.name,
      pool: r.poolName,
      pool_uuid: pool?.uuid ?? '',
      size: String(r.size),
      thin: r.meta.thin,
      share: r.meta.share,
      uri: engine.replicaUri(r),
      allocated: String(allocated),
      snapshot_source: r.meta.snapshotSource ?? '',
    };
  };
  const nexusMsg = (n: Nexus) => ({
    uuid: n.uuid,
    name: n.name,
    size: String(n.size),
    state: n.state,
    children: n.children.map((c) => ({
      uri: c.uri,
      uuid: c.uuid,
      state: c.state,
      reason: c.reason,
      rebuild_progress:
        c.state === 'Online'
          ? 100
          : c.rebuildPartial
            ? c.rebuildTotal > 0
              ? Math.min(99, Math.floor((c.rebuildCopied * 100) / c.rebuildTotal))
              : 0
            : Math.floor((c.rebuildCursor * 100) / n.size),
      rebuilt_bytes: String(c.rebuildCopied),
      rebuild_transferred_bytes: String(c.rebuildTransferred),
      rebuild_partial: c.rebuildPartial,
      faulted_at_ms: String(c.state === 'Faulted' ? c.faultedAt : 0),
      rebuild_started_at_ms: String(c.rebuildStartedAt ?? 0),
      rebuild_ended_at_ms: String(c.rebuildEndedAt ?? 0),
    })),
    share: n.exportedAs ? 'nbd' : 'none',
    device_uri: engine.targetUri(n),
    volume_id: n.volumeId ?? '',
    nexus_info_key: n.infoWriter.key,
    rebuilds: n.children.filter((c) => c.state === 'Degraded').length,
    shutdown_reason: n.shutdownReason,
  });
  const snapshotMsg = async (pool: Pool, uuid: string) => {
    const s = pool.snapshots.find((x) => x.uuid === uuid)!;
    const allocated = await stat(pool.snapshotPath(uuid)).then(
      (st) => st.blocks * 512,
      () => 0,
    );
    return {
      uuid: s.uuid,
      name: s.name,
      replica_uuid: s.replicaUuid,
      pool: pool.name,
      size: String(s.size),
      allocated: String(allocated),
      created_at: s.createdAt,
      reflink: s.reflink,
    };
  };
  const findSnapshot = (uuid: string) => {
    for (const pool of engine.pools.values()) if (pool.snapshots.some((s) => s.uuid === uuid)) return pool;
    return null;
  };
  const s = <T>(fn: () => Promise<T>) => engine.serial(fn);
  const holds = new NexusIoHolds(engine.ctx.log);
  const replicaList = new ReplicaList();
  const createReplica = (r: Req) =>
    s(async () => {
      const replica = await engine.createReplica({
        uuid: str(r.uuid),
        name: str(r.name),
        pool: str(r.pool),
        size: checkSize('replica size', r.size),
        thin: r.thin === true,
        share: str(r.share) || 'none',
      });
      // A new thin replica has nothing allocated; spares a stat per create.
      return replicaMsg(replica, replica.meta.thin ? 0 : undefined);
    });

  return {
    GetNodeInfo: unary(async () => ({
      node_id: identity.nodeId,
      grpc_endpoint: identity.grpcEndpoint,
      nbd_endpoint: identity.nbdEndpoint,
      version: identity.version,
      started_at: identity.startedAt,
    })),

    CreatePool: unary((r: Req) =>
      s(async () =>
        poolMsg(await engine.createPool(str(r.name), str(r.disk), checkSize('pool capacity', r.capacity))),
      ),
    ),
    ImportPool: unary((r: Req) => s(async () => poolMsg(await engine.importPool(str(r.name), str(r.disk))))),
    DestroyPool: unary((r: Req) =>
      s(async () => {
        await engine.destroyPool(str(r.name));
        return {};
      }),
    ),
    ExportPool: unary((r: Req) =>
      s(async () => {
        await engine.exportPool(str(r.name));
        return {};
      }),
    ),
    GetPool: unary(async (r: Req) => poolMsg(engine.pool(str(r.name)))),
    ListPools: unary(async () => ({ pools: await Promise.all([...engine.pools.values()].map(poolMsg)) })),

    CreateReplica: unary((r: Req) => createReplica(r)),
    CreateReplicas: unary(async (r: Req) => {
      const items: Req[] = Array.isArray(r.replicas) ? r.replicas : [];
      if (items.length > MAX_BATCH) throw invalid(`at most ${MAX_BATCH} replicas per CreateReplicas call`);
      // Each item queues on the control lock on its own; their metadata changes share one commit.
      const settled = await Promise.allSettled(items.map(createReplica));
      return {
        results: settled.map((res) => {
          if (res.status === 'fulfilled') return { replica: res.value };
          const e = toServiceError(res.reason);
          return { error: { code: e.code, message: e.details } };
        }),
      };
    }),
    DestroyReplica: unary((r: Req) =>
      s(async () => {
        engine.requireImported(str(r.pool));
        await engine.destroyReplica(str(r.uuid));
        return {};
      }),
    ),
    ResizeReplica: unary((r: Req) =>
      s(async () => {
        const { pool } = engine.replica(str(r.uuid));
        return replicaMsg(await pool.resizeReplica(str(r.uuid), checkSize('replica size', r.size)));
      }),
    ),
    ShareReplica: unary((r: Req) =>
      s(async () => {
        const protocol = str(r.protocol) || 'nbd';
        if (protocol !== 'nbd') throw invalid(`protocol '${protocol}' is not supported; use nbd`);
        return replicaMsg(await engine.shareReplica(str(r.uuid)));
      }),
    ),
    UnshareReplica: unary((r: Req) => s(async () => replicaMsg(await engine.unshareReplica(str(r.uuid))))),
    GetReplica: unary(async (r: Req) => replicaMsg(engine.replica(str(r.uuid)).replica)),
    ListReplicas: unary(async (r: Req) => {
      const pools = r.pool ? [engine.pool(str(r.pool))] : [...engine.pools.values()];
      const all = replicaList.of(pools);
      const { page, nextToken } = listingPage(all, str(r.starting_token), Number(r.max_entries) || 0);
      // Stats on this thread (100k through the thread pool held core's first reconcile pass for
      // seconds), in slices that leave the event loop to the data path in between.
      const replicas = [];
      const slice = new TimeSlice();
      for (const replica of page) {
        await slice.pause();
        replicas.push(replicaMsg(replica));
      }
      return { replicas, next_token: nextToken };
    }),

    CreateReplicaSnapshot: unary((r: Req) =>
      s(async () => {
        const uuid = checkName('snapshot uuid', r.snapshot_uuid);
        if (findSnapshot(uuid)) throw alreadyExists('snapshot', uuid);
        const { pool } = engine.replica(str(r.replica_uuid));
        await pool.createSnapshot(str(r.replica_uuid), uuid, str(r.name) || uuid);
        return snapshotMsg(pool, uuid);
      }),
    ),
    DestroyReplicaSnapshot: unary((r: Req) =>
      s(async () => {
        engine.requireImported(str(r.pool));
        const pool = findSnapshot(str(r.uuid));
        if (!pool) throw notFound('snapshot', str(r.uuid));
        await pool.destroySnapshot(str(r.uuid));
        return {};
      }),
    ),
    ListReplicaSnapshots: unary(async (r: Req) => {
      const out = [];
      for (const pool of engine.pools.values()) {
        for (const snap of pool.snapshots) {
          if (!r.replica_uuid || snap.replicaUuid === r.replica_uuid)
            out.push(await snapshotMsg(pool, snap.uuid));
        }
      }
      return { snapshots: out };
    }),
    CreateSnapshotClone: unary((r: Req) =>
      s(async () => {
        const pool = findSnapshot(str(r.snapshot_uuid));
        if (!pool) throw notFound('snapshot', str(r.snapshot_uuid));
        const uuid = checkName('clone uuid', r.clone_uuid);
        const existing = engine.findReplica(uuid);
        if (existing) throw alreadyExists('replica', uuid, `in pool '${existing.pool.name}'`);
        return replicaMsg(await pool.cloneSnapshot(str(r.snapshot_uuid), uuid, str(r.name) || uuid));
      }),
    ),

    CreateNexus: unary((r: Req) =>
      s(async () =>
        nexusMsg(
          await engine.createNexus({
            uuid: str(r.uuid),
            name: str(r.name),
            size: checkSize('nexus size', r.size),
            children: Array.isArray(r.children) ? r.children.map(str) : [],
            volumeId: str(r.volume_id),
            nexusInfoKey: str(r.nexus_info_key),
          }),
        ),
      ),
    ),
    DestroyNexus: unary((r: Req) =>
      s(async () => {
        await engine.destroyNexus(str(r.uuid));
        return {};
      }),
    ),
    ShutdownNexus: unary((r: Req) => s(async () => nexusMsg(await engine.shutdownNexus(str(r.uuid))))),
    PublishNexus: unary((r: Req) =>
      s(async () => nexusMsg(await engine.publishNexus(str(r.uuid), str(r.protocol)))),
    ),
    UnpublishNexus: unary((r: Req) => s(async () => nexusMsg(await engine.unpublishNexus(str(r.uuid))))),
    AddChildNexus: unary((r: Req) => s(async () => nexusMsg(await engine.addChild(str(r.uuid), str(r.uri))))),
    RemoveChildNexus: unary((r: Req) =>
      s(async () => {
        const n = engine.nexus(str(r.uuid));
        await n.removeChild(str(r.uri));
        return nexusMsg(n);
      }),
    ),
    FaultNexusChild: unary((r: Req) =>
      s(async () => {
        const n = engine.nexus(str(r.uuid));
        await n.faultChild(str(r.uri));
        return nexusMsg(n);
      }),
    ),
    ResizeNexus: unary((r: Req) =>
      s(async () => nexusMsg(await engine.resizeNexus(str(r.uuid), checkSize('nexus size', r.size)))),
    ),
    // Not serialized with the other calls: the replica snapshots it waits for are.
    HoldNexusIo: unary(async (r: Req) => ({
      hold_id: await holds.hold(engine.nexus(str(r.uuid)), Number(r.timeout_ms)),
    })),
    ReleaseNexusIo: unary(async (r: Req) => {
      holds.release(str(r.uuid), str(r.hold_id));
      return {};
    }),
    GetNexus: unary(async (r: Req) => nexusMsg(engine.nexus(str(r.uuid)))),
    ListNexuses: unary(async () => ({ nexuses: [...engine.nexuses.values()].map(nexusMsg) })),
    GetRebuildHistory: unary(async (r: Req) => {
      const n = engine.nexus(str(r.uuid));
      const blocks = (bytes: number) => String(Math.ceil(bytes / REBUILD_BLOCK));
      return {
        nexus: n.uuid,
        records: n.rebuildHistory.map((h) => ({
          child_uri: h.childUri,
          src_uri: h.srcUri,
          state: h.state,
          blocks_total: blocks(h.totalBytes),
          blocks_recovered: blocks(h.recoveredBytes),
          blocks_transferred: blocks(h.transferredBytes),
          blocks_remaining: blocks(h.totalBytes - h.recoveredBytes),
          block_size: String(REBUILD_BLOCK),
          is_partial: h.partial,
          start_time: h.startTime.toISOString(),
          end_time: h.endTime.toISOString(),
        })),
      };
    }),
    ListBlockDevices: unary(async (r: Req) => ({ devices: await listBlockDevices(r.all === true) })),
  };
}
