import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { isCreated, type VolumeSpec } from '../model.js';
import { buildAndShareNexus, childUri, usableReplicas } from '../ops/nexus-build.js';
import { publishVolume } from '../ops/volume-publish.js';
import { activeNexus, addReplicas, removeReplicas } from '../ops/volume-scale.js';
import { replicaOnline } from '../rest/present.js';
import { toSvcError } from '../svc-error.js';

/** Created, nothing pending, and (unless the caller holds its lock) no operation running on it. */
const idle = (ctx: CoreContext, v: VolumeSpec, locked = false) =>
  isCreated(v.status) && !v.operation && (locked || !ctx.registry.isBusy('volume', v.uuid));

/**
 * Volume nexus reconciler: a published volume whose nexus is missing on its (online) node — the
 * io-engine restarted — gets the same nexus recreated from the replicas its NexusInfo says are
 * healthy, and shared again at the same target. Runs after pools are re-imported.
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
        const { state, children } = await buildAndShareNexus(
          ctx,
          volume,
          nexus,
          replicas,
          nexus.share === 'none' ? 'nbd' : nexus.share,
        );
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
 * Self-heal (HotSpare): a replica on a node offline past the deadline, or a faulted nexus child, is
 * removed and replaced by a new replica on another node (added to the nexus, so it is rebuilt);
 * healthy replicas missing from the nexus (after an unclean recreate) are added back.
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
        const { volume, nexus, dead, missingChildren, want } = plan;
        if (dead.length) {
          await removeReplicas(
            ctx,
            volume,
            dead,
            'replica lost (node offline past the deadline or child faulted)',
          );
        }
        if (nexus && missingChildren.length) {
          const engine = engines.get(nexus.node);
          const copy = structuredClone(registry.nexuses.get(nexus.uuid)!);
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
        if (want > 0) {
          const added = await addReplicas(ctx, registry.volume(id), want);
          await registry.persist({
            events: [makeEvent('volume', id, 'Healing', `${added.length} replacement replica(s) created`)],
          });
        }
      })
      .catch((err) => ctx.log.warn({ volume: id, err: toSvcError(err).message }, 'self-heal step failed'));
  }
  return busy;
}

/** When each replica was first seen faulted in its nexus (replaced after the node deadline). */
const faultedSince = new Map<string, number>();

/** What self-heal would do for one volume now, or null when it is healthy (or cannot be healed). */
function healPlan(ctx: CoreContext, id: string, locked = false) {
  const { registry, config } = ctx;
  const stored = registry.volumes.get(id);
  if (!stored || !idle(ctx, stored, locked) || !stored.policy.self_heal) return null;
  const volume = structuredClone(stored);
  const nexus = activeNexus(ctx, volume);
  const nst = nexus ? registry.nexusStates.get(nexus.node)?.get(nexus.uuid) : undefined;
  if (nexus && !nst) return null; // target not running: it is recreated first
  const replicas = registry.volumeReplicas(id).filter((r) => isCreated(r.status));
  const childOf = (uuid: string) => nst?.children.find((c) => c.uri.includes(uuid));
  // Lost: on a node offline past the deadline, or faulted in the nexus while its node is up. A
  // faulted child on a node that just went away is waited for (it may come back within the deadline).
  const dead = replicas.filter((r) => {
    const node = registry.replicaNode(r) ?? '';
    if (!registry.isOnline(node)) return registry.offlineFor(node) >= config.nodeOfflineDeadlineMs;
    if (childOf(r.uuid)?.state !== 'Faulted') {
      faultedSince.delete(r.uuid);
      return false;
    }
    // A faulted child gets the same deadline: its node may merely be restarting.
    const since = faultedSince.get(r.uuid) ?? Date.now();
    faultedSince.set(r.uuid, since);
    return Date.now() - since >= config.nodeOfflineDeadlineMs;
  });
  const live = replicas.filter((r) => !dead.includes(r));
  const missingChildren = nst ? live.filter((r) => !childOf(r.uuid) && replicaOnline(registry, r)) : [];
  const want = volume.num_replicas - live.length;
  if (dead.length === 0 && want <= 0 && missingChildren.length === 0) return null;
  if (live.length === 0) return null; // nothing to rebuild from: manual intervention
  return { volume, nexus, dead, missingChildren, want };
}

/** Drain: move every volume target off a Draining node (republish elsewhere), then mark it Drained. */
export async function drainNodes(ctx: CoreContext): Promise<boolean> {
  const { registry } = ctx;
  const { markDrained } = await import('../ops/pool-node.js');
  let busy = false;
  for (const n of [...registry.nodes.values()]) {
    const cds = n.cordon_drain_state;
    if (!cds || !('Draining' in cds)) continue;
    busy = true;
    const targets = [...registry.volumes.values()].filter(
      (v) => v.target?.active !== false && v.target?.node === n.id,
    );
    for (const v of targets) {
      if (!idle(ctx, v)) continue;
      await publishVolume(ctx, v.uuid, {
        protocol: v.target!.protocol ?? 'nbd',
        publish_context: v.publish_context ?? {},
        republish: true,
      })
        .then(() =>
          registry.persist({
            events: [makeEvent('volume', v.uuid, 'Moved', `target moved off draining node ${n.id}`)],
          }),
        )
        .catch((err) =>
          ctx.log.warn({ volume: v.uuid, err: toSvcError(err).message }, 'drain: republish failed'),
        );
    }
    const left = [...registry.volumes.values()].some(
      (v) => v.target?.active !== false && v.target?.node === n.id,
    );
    if (!left) await markDrained(ctx, n.id).catch(() => {});
  }
  return busy;
}
