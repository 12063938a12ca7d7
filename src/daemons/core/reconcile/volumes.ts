import {
  cloneSpec,
  isCreated,
  type ReplicaSpec,
  replicaPoolName,
  type VolumeSpec,
} from '../../../lib/specs/index.js';
import { TimeSlice } from '../../../lib/time-slice.js';
import type { CoreContext } from '../context.js';
import type { PoolState } from '../engine-api.js';
import { makeEvent } from '../events.js';
import { poolFull, replicaOnline } from '../health.js';
import {
  buildAndShareNexus,
  childUri,
  unreachedChildren,
  upToDateReplicas,
  usableReplicas,
} from '../ops/nexus-build.js';
import { activeNexus, addReplicas, removeReplicas } from '../ops/volume-scale.js';
import { perCore } from '../per-core.js';
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
  const slice = new TimeSlice();
  for (const id of [...registry.volumes.keys()]) {
    await slice.pause();
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
              `for volume ${v.uuid} on node ${nexus.node} from ${replicas.length} healthy replica(s)${unreachedChildren(state)}`,
            ),
          ],
        });
      })
      .then(
        () => stepFailures(ctx).delete(id),
        (err) =>
          reportStepFailure(
            ctx,
            id,
            'RecreateFailed',
            `its target nexus was not recreated: ${toSvcError(err).message}`,
          ),
      );
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
 *
 * With a faulted-child wait period (upstream's --faulted-child-wait-period; docs/mayastor-compat.md
 * §3.7), a Faulted child is first waited for instead: once its io-engine answers and lists the
 * replica again, the same replica is added back to the nexus, which rebuilds it from its log of the
 * writes it missed (partial rebuild; in full when the nexus no longer has the log). It is replaced
 * only when the period since it was faulted ends, when its pool is back without it, or
 * after MAX_RETURNS returns within one period (a child that keeps failing). One whose pool is full
 * (its writes failed with ENOSPC) returns once the pool has room again.
 */
export async function healVolumes(ctx: CoreContext): Promise<boolean> {
  const { registry, engines } = ctx;
  let busy = false;
  forgetWatches(ctx);
  const slice = new TimeSlice();
  for (const id of [...registry.volumes.keys()]) {
    await slice.pause();
    if (!healPlan(ctx, id)) continue;
    busy = true;
    await registry
      .exclusive('volume', id, async () => {
        // Plan again under the lock, from the current specs and state.
        const plan = healPlan(ctx, id, true);
        if (!plan) return;
        const { volume, nexus, missingChildren, expired, fault } = plan;
        let { lost } = plan;
        // Unpublished, only the NexusInfo tells which replicas hold the latest data. A lost replica
        // that is the last of them is kept (its node may come back): the others hold old data.
        if (!nexus && lost.length) {
          const current = await upToDateReplicas(ctx, volume);
          if (!plan.live.some((r) => current.has(r.uuid))) lost = lost.filter((r) => !current.has(r.uuid));
        }
        if (plan.unannounced.length) await announceWaits(ctx, id, plan.unannounced, fault);
        const { back, gone, full } = nexus
          ? await returning(ctx, plan.returning)
          : { back: [], gone: [], full: [] };
        if (full.length) await announceFull(ctx, id, full);
        // Without a wait period, a faulted child is replaced at once only if its io-engine answers;
        // an unreachable one is left to the node deadline (its node may be restarting).
        const faulted = await answering(ctx, plan.faulted);
        const remove = async (replicas: ReplicaSpec[], why: string) => {
          avoidLater(ctx, id, replicas);
          await removeReplicas(ctx, registry.volume(id), replicas, why);
        };
        if (lost.length) await remove(lost, 'replica lost (node offline past the deadline)');
        for (const r of expired) {
          const since = watches(ctx).get(r.uuid)?.since;
          await remove(
            [r],
            `${faultText(fault(r), since)} and not back within the faulted-child wait period; replacing it`,
          );
        }
        if (gone.length)
          await remove(gone, 'nexus child faulted and its replica is gone from its pool; replacing it');
        for (const r of faulted)
          await remove([r], `${fault(r).what} on a live node${fault(r).why}; replacing it`);
        if (nexus && back.length) await returnChildren(ctx, id, nexus.uuid, back);
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
        // A faulted replica still waited for is not removed, so it is counted here: no replacement
        // is made for it meanwhile.
        const have = registry.volumeReplicas(id).filter((r) => isCreated(r.status)).length;
        const want = current.num_replicas - have;
        if (want > 0) {
          const added = await addReplicas(ctx, current, want, avoided(ctx, id));
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
      .then(
        () => stepFailures(ctx).delete(id),
        (err) => reportStepFailure(ctx, id, 'HealFailed', toSvcError(err).message),
      );
  }
  return busy;
}

/**
 * A self-heal or target recreation step that failed is said (log and event) once per reason: the
 * step is tried again every pass, and a volume no pool can take a replica of, or whose target
 * could not be rebuilt, logged the same warning every 2 s while `storctl events` said nothing of
 * why it stayed Degraded or without a target.
 */
async function reportStepFailure(
  ctx: CoreContext,
  id: string,
  action: 'HealFailed' | 'RecreateFailed',
  why: string,
): Promise<void> {
  const failures = stepFailures(ctx);
  if (failures.get(id) === why) return;
  failures.set(id, why);
  ctx.log.warn(
    { volume: id, err: why },
    action === 'HealFailed' ? 'self-heal step failed' : 'nexus recreation failed',
  );
  await ctx.registry
    .persist({
      events: [
        makeEvent(
          'volume',
          id,
          action,
          `${why}; core tries again every pass (said again if the reason changes)`,
        ),
      ],
    })
    .catch(() => {});
}

/** Times a faulted child is added back within one wait period before it is replaced instead. */
export const MAX_RETURNS = 3;

/**
 * A Faulted child waited for: since when (its io-engine's fault time, else core's first sighting),
 * and how often it was added back.
 */
interface FaultWatch {
  since: number;
  returns: number;
  /** The wait was announced in an event (so a Degraded volume says what it waits for). */
  announced: boolean;
  /** Its full pool holding it back was said in an event. */
  fullAnnounced?: boolean;
}

/**
 * Per core (its registry), per replica uuid. In memory: a restarted core takes the period's start
 * from the io-engine again, but counts returns from zero.
 */
const watches = perCore<FaultWatch>();
/** Per core, per volume uuid: why its last self-heal or recreation step failed (none after one that worked). */
const stepFailures = perCore<string>();

/**
 * Per core, per volume uuid: the nodes where self-heal removed a replica of the volume, and until
 * when its replacements try them last. A replacement placed back there fails again when what failed
 * is the node (its data network cut off from the target's, its disk failing): with a cut, it went
 * back to the same node twice before another was tried, each time a connect timeout later.
 */
const failedOn = perCore<Map<string, number>>();
/** How long a node where a replica failed is tried last: upstream's default faulted-child wait. */
const AVOID_MS = 10 * 60_000;

function avoidLater(ctx: CoreContext, id: string, replicas: ReplicaSpec[]): void {
  const nodes = failedOn(ctx).get(id) ?? new Map<string, number>();
  for (const r of replicas) {
    const node = ctx.registry.replicaNode(r);
    if (node) nodes.set(node, Date.now() + AVOID_MS);
  }
  if (nodes.size) failedOn(ctx).set(id, nodes);
}

function avoided(ctx: CoreContext, id: string): string[] {
  const nodes = failedOn(ctx).get(id);
  if (!nodes) return [];
  const now = Date.now();
  for (const [node, until] of nodes) if (until <= now) nodes.delete(node);
  if (!nodes.size) failedOn(ctx).delete(id);
  return [...nodes.keys()];
}

/** The wait period in effect (0: partial rebuild disabled, a faulted child is replaced at once). */
const waitPeriod = (ctx: CoreContext) =>
  ctx.config.disablePartialRebuild ? 0 : Math.max(0, ctx.config.faultedChildWaitMs ?? 0);

/** Drop watches of replicas, and heal failures and failed-on nodes of volumes, that no longer exist. */
function forgetWatches(ctx: CoreContext): void {
  const w = watches(ctx);
  for (const uuid of w.keys()) if (!ctx.registry.replicas.has(uuid)) w.delete(uuid);
  for (const perVolume of [stepFailures(ctx), failedOn(ctx)])
    for (const uuid of perVolume.keys()) if (!ctx.registry.volumes.has(uuid)) perVolume.delete(uuid);
}

/** A faulted child's replica held back by its full pool. */
interface HeldBack {
  replica: ReplicaSpec;
  pool: PoolState;
}

/**
 * Of the faulted replicas waited for whose node is online: those whose io-engine answers with the
 * replica's pool listing it and room in it (back), and those whose pool is listed without it (gone).
 * A node whose io-engine does not answer, a pool not imported yet or a full one is waited for still.
 */
async function returning(
  ctx: CoreContext,
  replicas: ReplicaSpec[],
): Promise<{ back: ReplicaSpec[]; gone: ReplicaSpec[]; full: HeldBack[] }> {
  const back: ReplicaSpec[] = [];
  const gone: ReplicaSpec[] = [];
  const full: HeldBack[] = [];
  for (const r of replicas) {
    const engine = ctx.engines.tryGet(ctx.registry.replicaNode(r) ?? '');
    if (!engine) continue;
    const found = await Promise.all([engine.listPools(), engine.listReplicas()]).catch(() => null);
    if (!found) continue;
    const [pools, list] = found;
    const pool = pools.find((p) => p.id === r.pool);
    if (!pool) continue;
    if (!list.some((x) => x.uuid === r.uuid)) gone.push(r);
    // A full pool: the child waits, as Mayastor's ENOSPC children do (its rebuild would fail as its writes did).
    else if (!poolFull(pool)) back.push(r);
    else full.push({ replica: r, pool });
  }
  return { back, gone, full };
}

/** Say in an event, once per fault, that a faulted child waits for room in its full pool. */
async function announceFull(ctx: CoreContext, volumeId: string, full: HeldBack[]): Promise<void> {
  const w = watches(ctx);
  const unsaid = full.filter(({ replica }) => !w.get(replica.uuid)?.fullAnnounced);
  if (!unsaid.length) return;
  await ctx.registry.persist({
    events: unsaid.map(({ replica, pool }) => {
      const since = w.get(replica.uuid)?.since;
      return makeEvent(
        'volume',
        volumeId,
        'PoolFull',
        `replica ${replica.uuid}: its pool ${pool.id} on ${ctx.registry.replicaNode(replica) ?? 'an unknown node'} is full (${pool.free} of ${pool.capacity} bytes free), so its faulted child is not added back; free space in that pool (delete volumes or snapshots there)${since === undefined ? '' : `, or it is replaced once the wait that ends at ${new Date(since + waitPeriod(ctx)).toISOString()} is over`}`,
      );
    }),
  });
  for (const { replica } of unsaid) {
    const watch = w.get(replica.uuid);
    if (watch) watch.fullAnnounced = true;
  }
}

/** A replica out of its volume's target, as healPlan's `fault` tells it. */
interface Fault {
  what: string;
  why: string;
  absent: boolean;
}

/** "nexus child faulted at T (why)", or "replica unavailable since T (why)". */
const faultText = (f: Fault, since: number | undefined) =>
  `${f.what}${since === undefined ? '' : ` ${f.absent ? 'since' : 'at'} ${new Date(since).toISOString()}`}${f.why}`;

/** Say in an event, once per fault, which faulted children core waits for, why and until when. */
async function announceWaits(
  ctx: CoreContext,
  volumeId: string,
  replicas: ReplicaSpec[],
  fault: (r: ReplicaSpec) => Fault,
): Promise<void> {
  const w = watches(ctx);
  const until = (since: number) => new Date(since + waitPeriod(ctx)).toISOString();
  await ctx.registry.persist({
    events: replicas.map((r) => {
      const since = w.get(r.uuid)!.since;
      return makeEvent(
        'volume',
        volumeId,
        'WaitingForChild',
        `replica ${r.uuid} on ${ctx.registry.replicaNode(r) ?? 'an unknown node'}: ${faultText(fault(r), since)}; waiting until ${until(since)} for it to come back${fault(r).absent ? '' : ' (partial rebuild)'} before replacing it`,
      );
    }),
  });
  for (const r of replicas) {
    const watch = w.get(r.uuid);
    if (watch) watch.announced = true;
  }
}

/** Add faulted replicas that are back to the nexus again: the io-engine rebuilds them (partially). */
async function returnChildren(
  ctx: CoreContext,
  volumeId: string,
  nexusId: string,
  back: ReplicaSpec[],
): Promise<void> {
  const { registry } = ctx;
  const spec = registry.nexuses.get(nexusId);
  if (!spec) return;
  const engine = ctx.engines.get(spec.node);
  const copy = cloneSpec(spec);
  const done: string[] = [];
  for (const r of back) {
    const w = watches(ctx).get(r.uuid);
    // Counted before the call: a return that fails counts too, so the retries are bounded.
    if (w) w.returns++;
    try {
      const uri = await childUri(ctx, r, spec.node);
      const st = await engine.addChild(nexusId, uri);
      registry.setNexusState(spec.node, st);
      copy.children = copy.children.filter((c) => !('Replica' in c && c.Replica.uuid === r.uuid));
      copy.children.push({ Replica: { uuid: r.uuid, share_uri: uri } });
      done.push(r.uuid);
    } catch (err) {
      ctx.log.warn(
        { volume: volumeId, replica: r.uuid, err: toSvcError(err).message },
        'adding a faulted child back failed',
      );
    }
  }
  if (!done.length) return;
  await registry.persist({
    nexuses: [copy],
    events: [
      makeEvent(
        'volume',
        volumeId,
        'Rebuilding',
        `faulted replica(s) ${done.join(', ')} back within the faulted-child wait period: added to the nexus again (partial rebuild)`,
      ),
    ],
  });
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
  const nexus = activeNexus(ctx, stored);
  const nst = nexus ? registry.nexusStates.get(nexus.node)?.get(nexus.uuid) : undefined;
  if (nexus && !nst) return null; // target not running: it is recreated first
  const replicas = registry.volumeReplicas(id).filter((r) => isCreated(r.status));
  const childOf = (uuid: string) => nst?.children.find((c) => c.uri.includes(uuid));
  const wait = waitPeriod(ctx);
  const watched = watches(ctx);
  const now = Date.now();
  const lost: ReplicaSpec[] = [];
  const faulted: ReplicaSpec[] = [];
  /** Faulted, waited for past the period (or returned too often): replaced whatever its node's state. */
  const expired: ReplicaSpec[] = [];
  /** Faulted, within the period, on an online node: added back if its replica is there. */
  const returning: ReplicaSpec[] = [];
  /** Faulted, within the period, node offline: nothing to do yet. */
  const waiting: ReplicaSpec[] = [];
  /** Waited for, and not yet said so in an event. */
  const unannounced: ReplicaSpec[] = [];
  /** Not in the target, on a node that answers, its pool not imported (see `fault`). */
  const absent = new Set<string>();
  for (const r of replicas) {
    const node = registry.replicaNode(r) ?? '';
    const state = childOf(r.uuid)?.state;
    if (
      nst &&
      state === undefined &&
      registry.isOnline(node) &&
      registry.poolImportFailed.has(replicaPoolName(r))
    )
      absent.add(r.uuid);
    if ((state === 'Faulted' || absent.has(r.uuid)) && wait > 0) {
      let w = watched.get(r.uuid);
      if (!w) {
        // From the io-engine's fault time where it reports one, so a restarted core does not wait a
        // whole period again (never later than now: the clocks of two machines differ).
        const faultedAt = childOf(r.uuid)?.faultedAt;
        w = { since: faultedAt ? Math.min(faultedAt, now) : now, returns: 0, announced: false };
        watched.set(r.uuid, w);
      }
      if (now - w.since >= wait || w.returns >= MAX_RETURNS) expired.push(r);
      else {
        if (registry.isOnline(node) && !absent.has(r.uuid)) returning.push(r);
        else waiting.push(r);
        if (!w.announced) unannounced.push(r);
      }
      continue;
    }
    // Healthy again for a whole period since its fault: a later fault starts a new period.
    if (state === 'Online' && now - (watched.get(r.uuid)?.since ?? now) >= wait) watched.delete(r.uuid);
    // A replica on a node that went away is waited for: the node may come back within the deadline.
    if (!registry.isOnline(node)) {
      if (registry.offlineFor(node) >= config.nodeOfflineDeadlineMs) lost.push(r);
    } else if (state === 'Faulted' || absent.has(r.uuid)) faulted.push(r);
  }
  const out = [...lost, ...faulted, ...expired, ...returning, ...waiting];
  const live = replicas.filter((r) => !out.includes(r));
  const missingChildren = nst ? live.filter((r) => !childOf(r.uuid) && replicaOnline(registry, r)) : [];
  // Faulted children waited for keep their place (no replacement is made for them meanwhile).
  const want = stored.num_replicas - live.length - returning.length - waiting.length;
  if (
    lost.length === 0 &&
    faulted.length === 0 &&
    expired.length === 0 &&
    returning.length === 0 &&
    unannounced.length === 0 &&
    want <= 0 &&
    missingChildren.length === 0
  )
    return null;
  // Nothing to rebuild from (no healthy child left): manual intervention.
  if (live.length === 0) return null;
  if (nst && !live.some((r) => childOf(r.uuid)?.state === 'Online')) return null;
  /**
   * What happened to a replica that is out, for the events: its nexus child faulted (and why, as
   * the io-engine says), or it is unavailable (its pool failed to import, as when its disk failed:
   * the target was recreated without it and cannot take it back until the pool is there).
   */
  const fault = (r: ReplicaSpec): Fault => {
    if (!absent.has(r.uuid)) {
      const reason = childOf(r.uuid)?.reason;
      return { what: 'nexus child faulted', why: reason ? ` (${reason})` : '', absent: false };
    }
    const pool = replicaPoolName(r);
    const why = `its pool ${pool} was not imported: ${registry.poolImportFailed.get(pool)}`;
    return { what: 'replica unavailable', why: ` (${why})`, absent: true };
  };
  return {
    volume: cloneSpec(stored),
    nexus,
    fault,
    live,
    lost,
    faulted,
    expired,
    returning,
    waiting,
    unannounced,
    missingChildren,
  };
}
