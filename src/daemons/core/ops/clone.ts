import {
  currentReplicaSnapshots,
  isCreated,
  type ReplicaSpec,
  type VolumeSpec,
} from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import type { CreateVolumeBody } from '../rest/validate.js';
import { notFound, SvcError, stepFailureKind, toSvcError } from '../svc-error.js';
import { settleDirtyVolume } from './converge.js';
import { rollbackOp } from './settle.js';
import {
  commitCreated,
  destroyReplicasQuietly,
  leftToGc,
  newReplicaSpec,
  newVolumeSpec,
  sameVolume,
} from './volume-create.js';

/**
 * PUT /snapshots/{snapshot}/volumes/{volume}: a new volume whose replicas are clones of the
 * snapshot's replica snapshots (one per replica snapshot, in their pools). Logged like a create;
 * on failure the clones made so far are destroyed and the specs removed.
 */
export async function createCloneVolume(
  ctx: CoreContext,
  snapId: string,
  uuid: string,
  body: CreateVolumeBody,
): Promise<VolumeSpec> {
  const { registry, engines } = ctx;
  const snap = registry.snapshots.get(snapId);
  if (!snap) throw notFound('snapshot', snapId);
  if (!isCreated(snap.status))
    throw new SvcError('FailedPrecondition', `snapshot '${snapId}' is not ready as a source`);
  if (body.size !== snap.metadata.spec_size) {
    throw new SvcError(
      'OutOfRange',
      `clone size ${body.size} must equal the snapshot size ${snap.metadata.spec_size}`,
    );
  }
  const records = currentReplicaSnapshots(snap);
  if (body.replicas > records.length) {
    throw new SvcError(
      'FailedPrecondition',
      `snapshot '${snapId}' has ${records.length} replica snapshot(s); a clone can have at most that many replicas`,
    );
  }
  return registry.exclusive('volume', uuid, async () => {
    await settleDirtyVolume(registry, uuid);
    const volume = newVolumeSpec(uuid, body, {
      thin: true,
      content_source: { Snapshot: [snapId, snap.spec.source_id] },
    });
    // A retried clone (same snapshot, same parameters) returns the clone it made.
    const existing = registry.volumes.get(uuid);
    if (existing) return sameVolume(existing, volume);
    // Replica snapshots on nodes that answer, uncordoned ones first: the first ones recorded could
    // be on a node that is down while the others would serve (a restore in an incident).
    const nodes = new Map(registry.nodeViews().map((n) => [n.id, n]));
    const nodeOf = (r: (typeof records)[number]) =>
      nodes.get(registry.pools.get(r.spec.source_id.pool_id)?.node ?? '');
    const usable = records
      .filter((r) => nodeOf(r)?.online)
      .sort((a, b) => Number(nodeOf(a)!.cordoned) - Number(nodeOf(b)!.cordoned));
    // Unavailable, not FailedPrecondition: their nodes coming back is all it takes (a CSI
    // provisioner retries it as such).
    if (usable.length < body.replicas)
      throw new SvcError(
        'Unavailable',
        `snapshot '${snapId}': ${usable.length} of its ${records.length} replica snapshot(s) are on nodes online now; a clone of ${body.replicas} replica(s) needs as many; retry once their nodes are back, or ask for fewer replicas`,
      );
    const chosen = usable.slice(0, body.replicas);
    const replicas = chosen.map(
      (r): ReplicaSpec => ({
        ...newReplicaSpec(volume, r.spec.source_id.pool_id),
        thin: true,
        kind: 'snapshotClone',
      }),
    );
    await registry.persist({ volumes: [volume], replicas });
    const made: typeof replicas = [];
    try {
      for (const [i, r] of replicas.entries()) {
        const node = registry.pools.get(chosen[i].spec.source_id.pool_id)!.node;
        const st = await engines.get(node).createSnapshotClone(chosen[i].spec.uuid, r.uuid);
        registry.setReplicaState(node, st);
        made.push(r);
      }
    } catch (err) {
      const { destroyed } = await destroyReplicasQuietly(ctx, made);
      // The clone that failed may be made once its request gets through; the ones after it were not asked for.
      const unknown = [...made.filter((r) => !destroyed.includes(r)), replicas[made.length]];
      await rollbackOp(
        registry,
        { kind: 'volume', id: uuid },
        {
          deleteVolumes: [uuid],
          deleteReplicas: replicas.filter((r) => !unknown.includes(r)).map((r) => r.uuid),
          replicas: unknown.map(leftToGc),
        },
      );
      const why = toSvcError(err);
      throw new SvcError(
        stepFailureKind(why.kind),
        `clone volume '${uuid}' not created: ${why.message}`,
        why.details,
      );
    }
    await commitCreated(
      registry,
      volume,
      replicas,
      makeEvent('volume', uuid, 'Created', `clone of snapshot ${snapId} (${replicas.length} replica(s))`),
    );
    return volume;
  });
}
