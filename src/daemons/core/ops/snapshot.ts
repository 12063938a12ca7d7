import { randomUUID } from 'node:crypto';
import {
  allReplicaSnapshots,
  cloneSpec,
  poolRefName,
  type ReplicaSnapshot,
  type ReplicaSpec,
  type VolumeSnapshot,
  withoutReplicaSnapshots,
} from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import type { EngineApi } from '../engine-api.js';
import { makeEvent } from '../events.js';
import { replicaOnline } from '../health.js';
import { predecessorBytes } from '../snapshot-space.js';
import { notFound, SvcError, stepFailureKind, toSvcError } from '../svc-error.js';
import { upToDateReplicas } from './nexus-build.js';
import { retrySettle, rollbackOp, settleOp } from './settle.js';
import { checkUsable } from './volume-publish.js';
import { activeNexus } from './volume-scale.js';

/** How long the target's I/O may stay held while the replica snapshots are taken. */
const SNAPSHOT_HOLD_MS = 120_000;

/**
 * Volume snapshot (docs/mayastor-compat.md §1.11): one replica snapshot per online, up-to-date
 * replica, named `<snapshot-uuid>/<txn_id>` on the io-engine; the VolumeSnapshot record is logged
 * Creating first and left Creating on failure (LeaveAsIs: a retry with the same id is allowed).
 */
export async function createSnapshot(
  ctx: CoreContext,
  volumeId: string,
  snapId: string,
): Promise<VolumeSnapshot> {
  const { registry, engines } = ctx;
  return registry.exclusive('volume', volumeId, async () => {
    const volume = registry.volume(volumeId);
    checkUsable(volume);
    // A create answered 507 whose commit write failed: written now if the store is back.
    if (registry.snapshots.get(snapId)?.metadata.operation)
      await retrySettle(registry, { kind: 'snapshot', id: snapId }, []).catch(() => false);
    const existing = registry.snapshots.get(snapId);
    if (existing && existing.spec.source_id !== volumeId)
      throw new SvcError('AlreadyExists', `snapshot '${snapId}' exists for another volume`);
    if (existing?.status === 'Deleting')
      throw new SvcError('Deleting', `snapshot '${snapId}' is being deleted; retry once it is gone`);
    // The same request again (a retry of one answered 507) returns the snapshot it made.
    if (existing && existing.status !== 'Creating' && !existing.metadata.operation) return existing;
    const count = registry.volumeSnapshots(volumeId).length;
    if (!existing && volume.max_snapshots !== undefined && count >= volume.max_snapshots) {
      throw new SvcError(
        'OutOfRange',
        `volume '${volumeId}' already has its maximum of ${volume.max_snapshots} snapshots`,
        'SnapshotMaxLimit',
      );
    }
    // Only replicas holding the volume's latest data: a snapshot of one being rebuilt (or faulted)
    // holds old or partial data, and a clone made from it would serve that.
    const current = await upToDateReplicas(ctx, volume);
    const replicas = registry
      .volumeReplicas(volumeId)
      .filter((r) => replicaOnline(registry, r) && current.has(r.uuid));
    if (replicas.length === 0)
      throw new SvcError(
        'FailedPrecondition',
        `No online replica of volume '${volumeId}' holds its latest data (the others are being rebuilt or faulted)`,
      );
    const txnId = String(Number(existing?.metadata.txn_id ?? '0') + 1);
    const snap: VolumeSnapshot = existing
      ? cloneSpec(existing)
      : {
          status: 'Creating',
          spec: { source_id: volumeId, uuid: snapId },
          metadata: {
            operation: null,
            timestamp: null,
            spec_size: volume.size,
            size: 0,
            total_allocated_size: 0,
            txn_id: '0',
            transactions: {},
          },
        };
    // Each replica snapshot's uuid is logged with the operation before any is taken: a crash or a
    // lost answer can leave one on its io-engine, and what is logged can be destroyed later.
    const planned = await Promise.all(
      replicas.map(async (r) =>
        plannedReplicaSnapshot(r, await poolUuidOf(ctx, poolRefName(r.pool)), snapId, txnId, volume.size),
      ),
    );
    snap.metadata.txn_id = txnId;
    snap.metadata.operation = { operation: { Create: { txn_id: txnId, replicas: planned } }, result: null };
    await registry.persist({ snapshots: [snap] });
    const snapshotReplica = async (r: ReplicaSpec, plan: ReplicaSnapshot): Promise<ReplicaSnapshot> => {
      const engine = engines.get(registry.replicaNode(r)!);
      const st = await engine.createReplicaSnapshot(r.uuid, plan.spec.uuid, `${snapId}/${txnId}`);
      return {
        ...plan,
        status: { Created: null },
        metadata: {
          ...plan.metadata,
          timestamp: new Date().toISOString(),
          size: st.size,
          allocated_size: st.allocated,
        },
      };
    };
    const records: ReplicaSnapshot[] = [];
    // While published, the target's I/O is held across the replica snapshots (taken at once), so
    // they hold the same writes: otherwise a write landing between two of them leaves a clone's
    // replicas different.
    const nexus = replicas.length > 1 ? activeNexus(ctx, volume) : undefined;
    let hold: { engine: EngineApi; nexus: string; id: string } | null = null;
    try {
      if (nexus) {
        const engine = engines.get(nexus.node);
        hold = { engine, nexus: nexus.uuid, id: await engine.holdNexusIo(nexus.uuid, SNAPSHOT_HOLD_MS) };
      }
      const taken = await Promise.allSettled(replicas.map((r, i) => snapshotReplica(r, planned[i])));
      for (const t of taken) if (t.status === 'fulfilled') records.push(t.value);
      const failed = taken.find((t) => t.status === 'rejected');
      if (failed) throw failed.reason;
      if (hold) {
        const { engine, nexus, id } = hold;
        hold = null;
        await engine.releaseNexusIo(nexus, id).catch((err) => {
          if (toSvcError(err).kind !== 'NotFound') throw err;
          throw new SvcError(
            'Aborted',
            `snapshot '${snapId}' not taken: the I/O hold on the target of volume '${volumeId}' ended (after ${SNAPSHOT_HOLD_MS} ms) before every replica was snapshotted; retry`,
          );
        });
      }
    } catch (err) {
      if (hold) await hold.engine.releaseNexusIo(hold.nexus, hold.id).catch(() => {});
      snap.metadata.operation = null;
      // Those that failed may exist all the same (an answer lost): kept, for a delete to destroy.
      snap.metadata.transactions[txnId] = planned.map(
        (p) => records.find((r) => r.spec.uuid === p.spec.uuid) ?? p,
      );
      await rollbackOp(registry, { kind: 'snapshot', id: snapId }, { snapshots: [snap] });
      const why = toSvcError(err);
      throw new SvcError(stepFailureKind(why.kind), why.message, why.details);
    }
    snap.status = { Created: null };
    snap.metadata.operation = null;
    snap.metadata.timestamp = new Date().toISOString();
    snap.metadata.size = volume.size;
    // Held by this snapshot and the earlier ones of the same replica (its largest replica's).
    snap.metadata.total_allocated_size = Math.max(
      0,
      ...records.map(
        (r) =>
          Number(r.metadata.allocated_size) +
          predecessorBytes(registry, volumeId, r.spec.source_id.replica_id, String(r.metadata.timestamp)),
      ),
    );
    // Earlier failed attempts' replica snapshots stay recorded until the snapshot GC destroys them.
    snap.metadata.transactions[txnId] = records;
    await settleOp(registry, { kind: 'snapshot', id: snapId }, true, {
      snapshots: [snap],
      events: [
        makeEvent(
          'snapshot',
          snapId,
          'Created',
          `of volume ${volumeId} (${records.length} replica snapshot(s))`,
        ),
      ],
    });
    return snap;
  });
}

/**
 * Delete a volume snapshot: its replica snapshots on their io-engines, then its record. Volumes
 * restored from it do not hold it: a clone's replicas are copies of the replica snapshots, not
 * layers on them (io-engine `cloneSnapshot`).
 */
export async function deleteSnapshot(
  ctx: CoreContext,
  volumeId: string | null,
  snapId: string,
): Promise<void> {
  const snap = ctx.registry.snapshots.get(snapId);
  if (!snap || (volumeId && snap.spec.source_id !== volumeId)) throw notFound('snapshot', snapId);
  const left = await ctx.registry.exclusive('snapshot', snapId, async () => {
    const now = ctx.registry.snapshots.get(snapId); // a delete that held the lock before may have finished
    return now ? finishSnapshotDelete(ctx, now) : 0;
  });
  if (left)
    throw new SvcError(
      'Unavailable',
      `snapshot '${snapId}': ${left} replica snapshot(s) could not be destroyed now; the garbage collector retries`,
    );
}

/**
 * Shared by the delete request and the snapshot GC (which finishes deletes a node's outage cut
 * short): log Destroy (status Deleting), destroy the replica snapshots, then remove the record, or
 * keep it Deleting with those not destroyed yet. Returns how many were not. Call under the
 * snapshot's lock.
 */
export async function finishSnapshotDelete(ctx: CoreContext, snap: VolumeSnapshot): Promise<number> {
  const { registry } = ctx;
  const snapId = snap.spec.uuid;
  const copy = cloneSpec(snap);
  copy.status = 'Deleting';
  copy.metadata.operation = { operation: 'Destroy', result: null };
  await registry.persist({ snapshots: [copy] });
  const left = await destroyReplicaSnapshots(ctx, allReplicaSnapshots(copy));
  if (left.length) {
    copy.metadata.operation = null;
    copy.metadata.transactions = { [copy.metadata.txn_id]: left };
    // Partly destroyed: what is gone is committed, the rest stays for the garbage collector.
    await settleOp(registry, { kind: 'snapshot', id: snapId }, false, { snapshots: [copy] });
    return left.length;
  }
  await settleOp(registry, { kind: 'snapshot', id: snapId }, true, {
    deleteSnapshots: [snapId],
    events: [makeEvent('snapshot', snapId, 'Deleted', `of volume ${snap.spec.source_id}`)],
  });
  return 0;
}

/**
 * The replica snapshots of a created snapshot's earlier, failed attempts (transactions other than
 * its current one), which nothing reads any more.
 */
export function staleReplicaSnapshots(snap: VolumeSnapshot): ReplicaSnapshot[] {
  return Object.entries(snap.metadata.transactions)
    .filter(([txn]) => txn !== snap.metadata.txn_id)
    .flatMap(([, records]) => records);
}

/**
 * For the snapshot GC: destroy the replica snapshots of a created snapshot's failed attempts, then
 * drop them from its record (those whose node did not answer stay for the next pass). Call under
 * the snapshot's lock.
 */
export async function pruneStaleTransactions(ctx: CoreContext, snap: VolumeSnapshot): Promise<void> {
  const stale = staleReplicaSnapshots(snap);
  const left = new Set(await destroyReplicaSnapshots(ctx, stale));
  if (left.size === stale.length) return;
  const gone = new Set(stale.filter((r) => !left.has(r)).map((r) => r.spec.uuid));
  await ctx.registry.persist({ snapshots: [withoutReplicaSnapshots(snap, (r) => gone.has(r.spec.uuid))] });
}

/**
 * Destroy replica snapshots on their io-engines; returns those not destroyed (their node offline,
 * or its io-engine failed). "Not found" counts as destroyed: a destroy names the pool, and an
 * io-engine that has not imported that pool yet answers Unavailable instead.
 */
async function destroyReplicaSnapshots(
  ctx: CoreContext,
  records: ReplicaSnapshot[],
): Promise<ReplicaSnapshot[]> {
  const left: ReplicaSnapshot[] = [];
  for (const rs of records) {
    const pool = ctx.registry.pools.get(rs.spec.source_id.pool_id);
    const engine = pool ? ctx.engines.tryGet(pool.node) : null;
    try {
      if (!engine) throw new Error('node offline');
      await engine.destroyReplicaSnapshot(rs.spec.uuid, rs.spec.source_id.pool_id);
    } catch (err) {
      if (!/not found/i.test(String((err as Error).message))) left.push(rs);
    }
  }
  return left;
}

/** The record of a replica snapshot about to be taken (status Creating until its io-engine answers). */
function plannedReplicaSnapshot(
  r: ReplicaSpec,
  poolUuid: string,
  snapId: string,
  txnId: string,
  volumeSize: number,
): ReplicaSnapshot {
  return {
    status: 'Creating',
    spec: {
      source_id: { replica_id: r.uuid, pool_id: poolRefName(r.pool), pool_uuid: poolUuid },
      uuid: randomUUID(),
    },
    metadata: {
      operation: null,
      timestamp: null,
      source_spec_size: volumeSize,
      size: 0,
      allocated_size: 0,
      meta: { Volume: { parent: snapId, txn_id: txnId } },
    },
  };
}

/** A pool's uuid, as last polled from its io-engine, else asked of it now. */
async function poolUuidOf(ctx: CoreContext, poolId: string): Promise<string> {
  const known = ctx.registry.poolStates.get(poolId)?.uuid;
  if (known) return known;
  const node = ctx.registry.pools.get(poolId)?.node;
  const st = node ? (await ctx.engines.get(node).listPools()).find((p) => p.id === poolId) : undefined;
  if (!st) throw new SvcError('Unavailable', `pool '${poolId}' is not reported by its io-engine`);
  ctx.registry.poolStates.set(poolId, st);
  return st.uuid;
}
