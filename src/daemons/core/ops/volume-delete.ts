import { activeTarget, cloneSpec, type VolumeSpec } from '../../../lib/specs/index.js';
import { volumeNexusInfoPrefix } from '../../../lib/store/keys.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { SvcError, toSvcError } from '../svc-error.js';
import { settleDirtyVolume } from './converge.js';
import { settleOp } from './settle.js';
import { destroyReplicasQuietly, leftToGc } from './volume-create.js';

/**
 * Delete (idempotent for a retry): a volume being deleted (status Deleting, left by an earlier delete
 * whose io-engine calls or commit failed) is deleted again from where it stopped.
 * Delete: log Destroy (status Deleting), destroy the nexuses and replicas on their io-engines, then
 * remove every spec in one transaction. What cannot be destroyed now (node offline) stays as a
 * disowned Deleting spec that the garbage collectors finish later; the volume itself is gone.
 * Its snapshots stay, as upstream's do (a VolumeSnapshot outlives its PVC): each replica snapshot
 * is a file of its own in its pool, and a volume restored from one later has the data.
 */
export async function deleteVolume(
  ctx: CoreContext,
  uuid: string,
  { ifUnpublished = false }: { ifUnpublished?: boolean } = {},
): Promise<void> {
  return ctx.registry.exclusive('volume', uuid, async () => {
    // A retry of a delete answered 507: the pending Destroy (or whatever the failed write left) is
    // written now if the store is back; a delete that in fact finished answers 404 like Mayastor.
    const wasDeleting = ctx.registry.volumes.get(uuid)?.operation?.operation === 'Destroy';
    await settleDirtyVolume(ctx.registry, uuid);
    const volume = ctx.registry.volumes.get(uuid);
    if (!volume && wasDeleting) return; // this retry finished the delete it repeats
    if (!volume)
      throw new SvcError(
        'NotFound',
        `volume '${uuid}' not found: it was deleted already, or never created`,
        `The volume '${uuid}' was not found`,
      );
    // Checked under the volume's lock, so a publish cannot slip in between the check and the delete.
    const target = activeTarget(volume);
    if (ifUnpublished && target)
      throw new SvcError(
        'InUse',
        `volume '${uuid}' is published on node '${target.node}': a host may be using it; unpublish it first`,
        'VolumePublished',
      );
    await finishVolumeDelete(ctx, cloneSpec(volume));
  });
}

/** Shared by the delete request and the volume GC (which finishes deletes interrupted by a crash). */
export async function finishVolumeDelete(ctx: CoreContext, volume: VolumeSpec): Promise<void> {
  const { registry, engines } = ctx;
  const uuid = volume.uuid;
  const nexuses = registry.volumeNexuses(uuid);
  const replicas = registry.volumeReplicas(uuid);
  volume.status = 'Deleting';
  volume.operation = { operation: 'Destroy', result: null };
  await registry.persist({
    volumes: [volume],
    nexuses: nexuses.map((n) => ({ ...n, spec_status: 'Deleting' as const, operation: null })),
    replicas: replicas.map((r) => ({ ...r, status: 'Deleting' as const, operation: null })),
  });
  const leftNexuses: string[] = [];
  await Promise.all(
    nexuses.map(async (n) => {
      try {
        await engines.get(n.node).destroyNexus(n.uuid);
        registry.dropNexusState(n.node, n.uuid);
      } catch (err) {
        if (toSvcError(err).kind !== 'NotFound') leftNexuses.push(n.uuid);
      }
    }),
  );
  const { left } = await destroyReplicasQuietly(ctx, replicas);
  const leftIds = new Set(left.map((r) => r.uuid));
  const orphans = left.map(leftToGc);
  await settleOp(registry, { kind: 'volume', id: uuid }, true, {
    deleteVolumes: [uuid],
    deleteReplicas: replicas.filter((r) => !leftIds.has(r.uuid)).map((r) => r.uuid),
    replicas: orphans,
    deleteNexuses: nexuses.filter((n) => !leftNexuses.includes(n.uuid)).map((n) => n.uuid),
    nexuses: nexuses
      .filter((n) => leftNexuses.includes(n.uuid))
      .map((n) => ({ ...n, spec_status: 'Deleting' as const, owner: null, operation: null })),
    deletePrefixes: [volumeNexusInfoPrefix(registry.space, uuid)],
    events: [
      makeEvent(
        'volume',
        uuid,
        'Deleted',
        left.length
          ? `${left.length} replica(s) left for garbage collection`
          : 'volume and replicas destroyed',
      ),
    ],
  });
}
