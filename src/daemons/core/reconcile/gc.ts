import { cloneSpec, poolRefName } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { finishVolumeDelete } from '../ops/volume-delete.js';
import { toSvcError } from '../svc-error.js';

const firstSeen = new Map<string, number>();

/** True once `key` has been seen for longer than `graceMs` (first sighting starts the clock). */
function pastGrace(key: string, graceMs: number): boolean {
  const now = Date.now();
  const seen = firstSeen.get(key);
  if (seen === undefined) {
    firstSeen.set(key, now);
    return graceMs <= 0;
  }
  return now - seen >= graceMs;
}

/** Volume GC: finish deletes interrupted by a crash (Deleting volumes; Creating ones are made Deleting). */
export async function collectVolumes(ctx: CoreContext): Promise<void> {
  const { registry } = ctx;
  const deletable = (id: string) => {
    const v = registry.volumes.get(id);
    return v && !v.operation && (v.status === 'Deleting' || v.status === 'Creating' || v.status === 'Deleted')
      ? v
      : null;
  };
  for (const id of [...registry.volumes.keys()]) {
    if (!deletable(id) || registry.isBusy('volume', id)) continue;
    await registry
      .exclusive('volume', id, async () => {
        // Re-read under the lock: a request may have deleted and re-created the volume meanwhile.
        const v = deletable(id);
        if (v) await finishVolumeDelete(ctx, cloneSpec(v));
      })
      .catch((err) => ctx.log.warn({ volume: id, err: (err as Error).message }, 'volume GC failed'));
  }
}

/**
 * Nexus GC: destroy nexuses whose spec is Deleting, has no owner, or whose volume no longer targets
 * them; and nexuses an io-engine runs without any spec (left by a crash). No nexus outlives its volume.
 */
export async function collectNexuses(ctx: CoreContext): Promise<void> {
  const { registry, engines } = ctx;
  for (const id of [...registry.nexuses.keys()]) {
    // Re-read each spec: earlier iterations awaited, and requests may have changed it.
    const n = registry.nexuses.get(id);
    if (!n || n.operation) continue;
    // An operator's nexus (REST `PUT /nodes/{node}/nexuses/{id}`: unmanaged, no owner) is theirs to delete.
    if (!n.managed && !n.owner && n.spec_status !== 'Deleting') continue;
    const owner = n.owner ? registry.volumes.get(n.owner) : undefined;
    if (owner && registry.isBusy('volume', owner.uuid)) continue;
    const wanted =
      n.spec_status !== 'Deleting' &&
      owner &&
      owner.target?.nexus === n.uuid &&
      owner.target.active !== false;
    if (wanted) continue;
    const engine = engines.tryGet(n.node);
    if (!engine) continue;
    try {
      await engine.destroyNexus(n.uuid);
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') continue;
    }
    registry.dropNexusState(n.node, n.uuid);
    await registry.persist({
      deleteNexuses: [n.uuid],
      events: [makeEvent('nexus', n.uuid, 'Destroyed', `garbage collected on node ${n.node}`)],
    });
  }
  for (const [node, states] of registry.nexusStates) {
    const engine = engines.tryGet(node);
    if (!engine) continue;
    for (const uuid of [...states.keys()]) {
      if (registry.nexuses.has(uuid) || !pastGrace(`nexus/${uuid}`, ctx.config.replicaGcGraceMs)) continue;
      // Re-check after the grace period: an operation may have recorded it meanwhile.
      if (registry.nexuses.has(uuid)) continue;
      await engine.destroyNexus(uuid).catch(() => {});
      states.delete(uuid);
      firstSeen.delete(`nexus/${uuid}`);
      await registry.persist({
        events: [makeEvent('nexus', uuid, 'Destroyed', `nexus without spec removed from node ${node}`)],
      });
    }
  }
}

/**
 * Replica GC (docs/mayastor-compat.md §4.3 ReplicaReconciler): destroy Deleting replicas; destroy managed replicas
 * whose owner is gone after a grace period; destroy replicas an io-engine holds without any spec.
 */
export async function collectReplicas(ctx: CoreContext): Promise<void> {
  const { registry, engines, config } = ctx;
  for (const id of [...registry.replicas.keys()]) {
    const r = registry.replicas.get(id);
    if (!r || r.operation) continue;
    const owner = r.owners.volume ? registry.volumes.get(r.owners.volume) : undefined;
    if (owner && registry.isBusy('volume', owner.uuid)) continue;
    const orphan = r.managed && !owner;
    if (r.status !== 'Deleting' && !orphan) {
      firstSeen.delete(`replica/${r.uuid}`);
      continue;
    }
    if (r.status !== 'Deleting' && !pastGrace(`replica/${r.uuid}`, config.replicaGcGraceMs)) continue;
    const node = registry.replicaNode(r);
    const engine = node ? engines.tryGet(node) : null;
    if (!engine) continue;
    try {
      await engine.destroyReplica(r.uuid, poolRefName(r.pool));
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') continue;
    }
    registry.dropReplicaState(node!, r.uuid);
    firstSeen.delete(`replica/${r.uuid}`);
    await registry.persist({
      deleteReplicas: [r.uuid],
      events: [
        makeEvent(
          'replica',
          r.uuid,
          'Destroyed',
          `garbage collected from pool ${poolRefName(r.pool)} (${r.status === 'Deleting' ? 'Deleting' : `owner ${r.owners.volume ?? 'none'} gone`})`,
        ),
      ],
    });
  }
  for (const [node, states] of registry.replicaStates) {
    const engine = engines.tryGet(node);
    if (!engine) continue;
    for (const st of [...states.values()]) {
      if (registry.replicas.has(st.uuid)) continue;
      if (!pastGrace(`replica/${st.uuid}`, config.replicaGcGraceMs) || registry.replicas.has(st.uuid))
        continue;
      await engine.destroyReplica(st.uuid, st.pool).catch(() => {});
      states.delete(st.uuid);
      firstSeen.delete(`replica/${st.uuid}`);
      await registry.persist({
        events: [
          makeEvent('replica', st.uuid, 'Destroyed', `replica without spec removed from pool ${st.pool}`),
        ],
      });
    }
  }
}
