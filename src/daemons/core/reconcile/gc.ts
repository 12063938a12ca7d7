import { eachLimited } from '../../../lib/each-limited.js';
import { allReplicaSnapshots, cloneSpec, poolRefName, type ReplicaSpec } from '../../../lib/specs/index.js';
import { TimeSlice } from '../../../lib/time-slice.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { finishSnapshotDelete, pruneStaleTransactions, staleReplicaSnapshots } from '../ops/snapshot.js';
import { finishVolumeDelete } from '../ops/volume-delete.js';
import { perCore } from '../per-core.js';
import { toSvcError } from '../svc-error.js';

const firstSeen = new Map<string, number>();

/** True once `key` has been seen for longer than `graceMs` (first sighting starts the clock). */
function pastGrace(key: string, graceMs: number): boolean {
  const now = performance.now(); // in-memory grace: a step of the wall clock must not end it
  const seen = firstSeen.get(key);
  if (seen === undefined) {
    firstSeen.set(key, now);
    return graceMs <= 0;
  }
  return now - seen >= graceMs;
}

/**
 * Destroys and store writes of the GC in flight at once: after a crash with many interrupted
 * creates, a thousand collected one at a time would hold up core's first pass (and so its
 * readiness) for a thousand io-engine round trips and commits.
 */
const GC_IN_FLIGHT = 16;

/** Volume GC: finish deletes interrupted by a crash (Deleting volumes; Creating ones are made Deleting). */
export async function collectVolumes(ctx: CoreContext): Promise<void> {
  const { registry } = ctx;
  const deletable = (id: string) => {
    const v = registry.volumes.get(id);
    return v && !v.operation && (v.status === 'Deleting' || v.status === 'Creating' || v.status === 'Deleted')
      ? v
      : null;
  };
  const due = [...registry.volumes.keys()].filter((id) => deletable(id));
  await eachLimited(due, GC_IN_FLIGHT, async (id) => {
    if (registry.isBusy('volume', id)) return;
    await registry
      .exclusive('volume', id, async () => {
        // Re-read under the lock: a request may have deleted and re-created the volume meanwhile.
        const v = deletable(id);
        if (v) await finishVolumeDelete(ctx, cloneSpec(v));
      })
      .catch((err) => ctx.log.warn({ volume: id, err: (err as Error).message }, 'volume GC failed'));
  });
}

/**
 * Snapshot GC: finish deletes that a node's outage cut short (Deleting snapshots keep the replica
 * snapshots not destroyed yet), remove failed creates of a volume since deleted (Creating with no
 * operation pending: no retry can complete them without their volume), and destroy what a created
 * snapshot's failed attempts left (upstream's CleanupStaleTransactions).
 */
export async function collectSnapshots(ctx: CoreContext): Promise<void> {
  const { registry, engines } = ctx;
  const collectable = (id: string) => {
    const s = registry.snapshots.get(id);
    if (!s || s.metadata.operation || registry.isBusy('volume', s.spec.source_id)) return null;
    const abandoned = s.status === 'Creating' && !registry.volumes.has(s.spec.source_id);
    const stale = typeof s.status === 'object' ? staleReplicaSnapshots(s) : [];
    if (s.status !== 'Deleting' && !abandoned && !stale.length) return null;
    // Not while every node holding what is left is offline: each try writes the record twice.
    const nodes = (stale.length ? stale : allReplicaSnapshots(s)).map(
      (r) => registry.pools.get(r.spec.source_id.pool_id)?.node,
    );
    return nodes.length === 0 || nodes.some((n) => n && engines.tryGet(n)) ? s : null;
  };
  const due = [...registry.snapshots.keys()].filter((id) => collectable(id));
  await eachLimited(due, GC_IN_FLIGHT, async (id) => {
    if (registry.isBusy('snapshot', id)) return;
    await registry
      .exclusive('snapshot', id, async () => {
        const s = collectable(id); // re-read under the lock: a request may have finished it
        if (!s) return;
        if (typeof s.status === 'object') await pruneStaleTransactions(ctx, s);
        else await finishSnapshotDelete(ctx, s);
      })
      .catch((err) => ctx.log.warn({ snapshot: id, err: (err as Error).message }, 'snapshot GC failed'));
  });
}

/**
 * Nexus GC: destroy nexuses whose spec is Deleting, has no owner, or whose volume no longer targets
 * them; and nexuses an io-engine runs without any spec (left by a crash). No nexus outlives its volume.
 */
export async function collectNexuses(ctx: CoreContext): Promise<void> {
  const { registry, engines } = ctx;
  /** The nexus spec GC destroys now, if any. */
  const unwanted = (id: string) => {
    const n = registry.nexuses.get(id);
    if (!n || n.operation) return null;
    // An operator's nexus (REST `PUT /nodes/{node}/nexuses/{id}`: unmanaged, no owner) is theirs to delete.
    if (!n.managed && !n.owner && n.spec_status !== 'Deleting') return null;
    const owner = n.owner ? registry.volumes.get(n.owner) : undefined;
    if (owner && registry.isBusy('volume', owner.uuid)) return null;
    const wanted =
      n.spec_status !== 'Deleting' &&
      owner &&
      owner.target?.nexus === n.uuid &&
      owner.target.active !== false;
    return wanted ? null : n;
  };
  const due = [...registry.nexuses.keys()].filter((id) => unwanted(id));
  await eachLimited(due, GC_IN_FLIGHT, async (id) => {
    // Re-read each spec: other destroys awaited meanwhile, and requests may have changed it.
    const n = unwanted(id);
    const engine = n && engines.tryGet(n.node);
    if (!n || !engine) return;
    try {
      await engine.destroyNexus(n.uuid);
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') return;
    }
    registry.dropNexusState(n.node, n.uuid);
    await registry.persist({
      deleteNexuses: [n.uuid],
      events: [makeEvent('nexus', n.uuid, 'Destroyed', `garbage collected on node ${n.node}`)],
    });
  });
  await reportStrays(ctx, 'nexus', registry.nexusStates, (uuid) => registry.nexuses.has(uuid));
}

/**
 * Replica GC (docs/mayastor-compat.md §4.3 ReplicaReconciler): destroy Deleting replicas; destroy managed replicas
 * whose owner is gone after a grace period; destroy replicas an io-engine holds without any spec.
 */
export async function collectReplicas(ctx: CoreContext): Promise<void> {
  const { registry, engines, config } = ctx;
  /** Whether GC destroys the replica with this spec: Deleting, or managed and its owner gone. */
  const collectable = (r: ReplicaSpec) => {
    const owner = r.owners.volume ? registry.volumes.get(r.owners.volume) : undefined;
    if (r.operation || (owner && registry.isBusy('volume', owner.uuid))) return 'not now';
    return r.status === 'Deleting' || (r.managed && !owner) ? 'yes' : 'no';
  };
  const due: ReplicaSpec[] = [];
  const slice = new TimeSlice();
  for (const r of registry.replicas.values()) {
    await slice.pause();
    const verdict = collectable(r);
    if (verdict === 'no' && firstSeen.size) firstSeen.delete(`replica/${r.uuid}`);
    if (verdict !== 'yes') continue;
    if (r.status !== 'Deleting' && !pastGrace(`replica/${r.uuid}`, config.replicaGcGraceMs)) continue;
    due.push(r);
  }
  await eachLimited(due, GC_IN_FLIGHT, async (r) => {
    // Other destroys awaited meanwhile: a spec a request replaced or removed is not this one's to collect.
    if (registry.replicas.get(r.uuid) !== r || collectable(r) !== 'yes') return;
    const node = registry.replicaNode(r);
    const engine = node ? engines.tryGet(node) : null;
    if (!engine) return;
    try {
      await engine.destroyReplica(r.uuid, poolRefName(r.pool));
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') return;
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
  });
  await reportStrays(ctx, 'replica', registry.replicaStates, (uuid) => registry.replicas.has(uuid));
}

/** Per core: strays already said, by `stray-<kind>/<uuid>`. */
const reported = perCore<true>();

/**
 * Replicas and nexuses an io-engine holds that no spec names are said (event, once each, past the
 * grace period), never destroyed: core's own operations log a spec before they create anything, so a
 * stray is what core cannot account for — a volume's data or target the store no longer knows (a
 * store restored from an older dump, or lost), which destroying within a minute would have turned
 * into data loss, or into every target down. `storctl orphans` lists them and `--delete` removes them.
 */
async function reportStrays(
  ctx: CoreContext,
  kind: 'replica' | 'nexus',
  states: Map<string, Map<string, { uuid: string }>>,
  known: (uuid: string) => boolean,
): Promise<void> {
  const { registry, config } = ctx;
  const said = reported(ctx);
  const events = [];
  const seen = new Set<string>();
  for (const [node, onNode] of states) {
    for (const { uuid } of onNode.values()) {
      if (known(uuid)) continue;
      const key = `stray-${kind}/${uuid}`;
      seen.add(key);
      if (said.has(key) || !pastGrace(key, config.replicaGcGraceMs)) continue;
      said.set(key, true);
      events.push(
        makeEvent(
          kind,
          uuid,
          'Orphaned',
          `${kind} on node ${node} that no spec names: left as it is (it may hold a volume's ${kind === 'replica' ? 'data' : 'target'} the store no longer knows); \`storctl orphans\` lists it, \`storctl orphans --delete\` removes it`,
        ),
      );
    }
  }
  // Gone (removed by `orphans --delete`, or a spec names it now): said again if it comes back.
  for (const key of said.keys()) if (key.startsWith(`stray-${kind}/`) && !seen.has(key)) said.delete(key);
  for (const key of firstSeen.keys())
    if (key.startsWith(`stray-${kind}/`) && !seen.has(key)) firstSeen.delete(key);
  if (events.length) await registry.persist({ events });
}
