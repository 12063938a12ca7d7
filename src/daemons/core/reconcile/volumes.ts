import { cloneSpec, isCreated, type ReplicaSpec, type VolumeSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { replicaOnline } from '../health.js';
import { buildAndShareNexus, childUri, usableReplicas } from '../ops/nexus-build.js';
import { activeNexus, addReplicas, removeReplicas } from '../ops/volume-scale.js';
import { toSvcError } from '../svc-error.js';

/** Created, nothing pending, and (unless the caller holds its lock) no operation running on it. */
const idle = (ctx: CoreContext, v: VolumeSpec, locked = false) =>
  isCreated(v.status) && !v.operation && (locked || !ctx.registry.isBusy('volume', v.uuid));

/**
 * Volume nexus reconciler: a published volume whose nexus is missing on its (online) node — the
 * io-engine restarted — gets the same nexus recreated from the replicas its NexusInfo says are
 * healthy, and shared again at the same target unless the volume was unshared. Runs after pools
 * are re-imported.
 */
export async function recreateMissingNexuses(ctx: CoreContext): Promise<boolean> {
  const { registry } = ctx;
  let busy = false;
  const missing = (id: string, locked = false) => {
    const v = registry.volumes.get(id);
    if (!v || !idle(ctx, v, locked)) return null;
    const nexus = activeNexus(ctx, v);
    if (!nexus || !registry.isOnline(nexus.node) || !registry.polledPools.get(nexus.node)) return null;
    const states = registry.nexusStates.get(nexus.node);
    return states && !states.has(nexus.uuid) ? { v, nexus } : null;
  };
  for (const id of [...registry.volumes.keys()]) {
    if (!missing(id)) continue;
    busy = true;
    await registry
      .exclusive('volume', id, async () => {
        const found = missing(id, true);
        if (!found) return;
        const { v, nexus } = found;
        // The cache may lag: ask the io-engine before recreating.
        const live = await ctx.engines
          .get(nexus.node)
          .getNexus(nexus.uuid)
          .catch(() => null);
        if (live) {
          registry.setNexusState(nexus.node, live);
          return;
        }
        const volume = registry.volume(id);
        const replicas = await usableReplicas(ctx, volume, nexus.node);
        // Unshare persists `target.protocol: null` (the nexus spec's share 'none'): an unshared
        // target is recreated unshared. A shared one keeps its protocol (storctl serves nbd only).
        const protocol = volume.target?.protocol ? (nexus.share === 'none' ? 'nbd' : nexus.share) : null;
        const { state, children } = await buildAndShareNexus(ctx, volume, nexus, replicas, protocol);
        registry.setNexusState(nexus.node, state);
        await registry.persist({
          nexuses: [{ ...nexus, children }],
          events: [
            makeEvent(
              'nexus',
              nexus.uuid,
              'Recreated',
              `for volume ${v.uuid} on node ${nexus.node} from ${replicas.length} healthy replica(s)`,
            ),
          ],
        });
      })
      .catch((err) => ctx.log.warn({ volume: id, err: toSvcError(err).message }, 'nexus recreation failed'));
  }
  return busy;
}

/**
 * Self-heal (HotSpare, docs/mayastor-compat.md §4.3): a replica on a node offline past the deadline is removed; a
 * replica whose nexus child is Faulted while its io-engine still answers (an I/O error, a child
 * faulted through the io-engine) is removed at once — waiting for a node deadline would leave the
 * volume Degraded for nothing. Replacements are then created where the scheduler places them (the
 * same node when it is the best choice, else a spare), added to the nexus and rebuilt. Healthy
 * replicas missing from the nexus (after an unclean recreate) are added back.
 */
export async function healVolumes(ctx: CoreContext): Promise<boolean> {
  const { registry, engines } = ctx;
  let busy = false;
  for (const id of [...registry.volumes.keys()]) {
    if (!healPlan(ctx, id)) continue;
    busy = true;
    await registry
      .exclusive('volume', id, async () => {
        // Plan again under the lock, from the current specs and state.
        const plan = healPlan(ctx, id, true);
        if (!plan) return;
        const { volume, nexus, lost, missingChildren } = plan;
        // A faulted child is replaced at once only if its io-engine answers; an unreachable one is
        // left to the node deadline (its node may be restarting).
        const faulted = await answering(ctx, plan.faulted);
        if (lost.length) {
          await removeReplicas(ctx, volume, lost, 'replica lost (node offline past the deadline)');
        }
        if (faulted.length) {
          await removeReplicas(
            ctx,
            registry.volume(id),
            faulted,
            'nexus child faulted on a live node; replacing it',
          );
        }
        if (nexus && missingChildren.length) {
          const engine = engines.get(nexus.node);
          const copy = cloneSpec(registry.nexuses.get(nexus.uuid)!);
          for (const r of missingChildren) {
            const uri = await childUri(ctx, r, nexus.node);
            const st = await engine.addChild(nexus.uuid, uri);
            registry.setNexusState(nexus.node, st);
            copy.children = copy.children.filter((c) => !('Replica' in c && c.Replica.uuid === r.uuid));
            copy.children.push({ Replica: { uuid: r.uuid, share_uri: uri } });
          }
          await registry.persist({
            nexuses: [copy],
            events: [
              makeEvent(
                'volume',
                id,
                'Rebuilding',
                `${missingChildren.length} replica(s) re-added to the nexus`,
              ),
            ],
          });
        }
        const current = registry.volume(id);
        const have = registry.volumeReplicas(id).filter((r) => isCreated(r.status)).length;
        const want = current.num_replicas - have;
        if (want > 0) {
          const added = await addReplicas(ctx, current, want);
          const nodes = added.map((r) => registry.replicaNode(r)).join(', ');
          await registry.persist({
            events: [
              makeEvent(
                'volume',
                id,
                'Healing',
                `${added.length} replacement replica(s) created on ${nodes}`,
              ),
            ],
          });
        }
      })
      .catch((err) => ctx.log.warn({ volume: id, err: toSvcError(err).message }, 'self-heal step failed'));
  }
  return busy;
}

/** The replicas whose io-engine answers a call now (a live node, not one that just died). */
async function answering(ctx: CoreContext, replicas: ReplicaSpec[]): Promise<ReplicaSpec[]> {
  const alive = await Promise.all(
    replicas.map(async (r) => {
      const engine = ctx.engines.tryGet(ctx.registry.replicaNode(r) ?? '');
      return engine
        ? engine.listPools().then(
            () => true,
            () => false,
          )
        : false;
    }),
  );
  return replicas.filter((_, i) => alive[i]);
}

/** What self-heal would do for one volume now, or null when it is healthy (or cannot be healed). */
function healPlan(ctx: CoreContext, id: string, locked = false) {
  const { registry, config } = ctx;
  const stored = registry.volumes.get(id);
  if (!stored || !idle(ctx, stored, locked) || !stored.policy.self_heal) return null;
  const volume = cloneSpec(stored);
  const nexus = activeNexus(ctx, volume);
  const nst = nexus ? registry.nexusStates.get(nexus.node)?.get(nexus.uuid) : undefined;
  if (nexus && !nst) return null; // target not running: it is recreated first
  const replicas = registry.volumeReplicas(id).filter((r) => isCreated(r.status));
  const childOf = (uuid: string) => nst?.children.find((c) => c.uri.includes(uuid));
  const lost: ReplicaSpec[] = [];
  const faulted: ReplicaSpec[] = [];
  for (const r of replicas) {
    const node = registry.replicaNode(r) ?? '';
    // A replica on a node that went away is waited for: the node may come back within the deadline.
    if (!registry.isOnline(node)) {
      if (registry.offlineFor(node) >= config.nodeOfflineDeadlineMs) lost.push(r);
    } else if (childOf(r.uuid)?.state === 'Faulted') faulted.push(r);
  }
  const live = replicas.filter((r) => !lost.includes(r) && !faulted.includes(r));
  const missingChildren = nst ? live.filter((r) => !childOf(r.uuid) && replicaOnline(registry, r)) : [];
  const want = volume.num_replicas - live.length;
  if (lost.length === 0 && faulted.length === 0 && want <= 0 && missingChildren.length === 0) return null;
  // Nothing to rebuild from (no healthy child left): manual intervention.
  if (live.length === 0) return null;
  if (nst && !live.some((r) => childOf(r.uuid)?.state === 'Online')) return null;
  return { volume, nexus, lost, faulted, missingChildren };
}
