import { humanizeBytes } from '../../../lib/output/humanize.js';
import {
  cloneSpec,
  isCordoned,
  type NexusSpec,
  type ReplicaSpec,
  replicaPoolName,
  type VolumeSpec,
  volumeTargetNode,
} from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { replicaOnline } from '../health.js';
import { placeReplicas } from '../scheduler.js';
import { dirty, SvcError, stepFailureKind, toSvcError } from '../svc-error.js';
import { childUri, upToDateReplicas } from './nexus-build.js';
import { markResult, type OpTarget, rollbackOp, type SpecChange, settleOp } from './settle.js';
import { createOnEngines, destroyReplicasQuietly, leftToGc, newReplicaSpec } from './volume-create.js';
import { checkUsable } from './volume-publish.js';

/** The active nexus of a published volume, if its node is online. */
export function activeNexus(ctx: CoreContext, v: VolumeSpec): NexusSpec | undefined {
  if (!v.target || v.target.active === false) return undefined;
  return ctx.registry.nexuses.get(v.target.nexus);
}

/**
 * Add `count` replicas to a volume: place them on new nodes, create them, and if the volume is
 * published add each as a nexus child (the io-engine rebuilds it from the healthy children).
 * Shared by scale-up and self-heal. Returns the replicas added. Nodes in `avoidNodes` are tried last
 * (self-heal's nodes where a replica of the volume failed lately).
 */
export async function addReplicas(
  ctx: CoreContext,
  volume: VolumeSpec,
  count: number,
  avoidNodes: string[] = [],
): Promise<ReplicaSpec[]> {
  const { specs, commit } = await makeReplicas(ctx, volume, count, avoidNodes);
  // The replicas are made: their commit is settled (a failed write leaves them dirty with result true).
  await settleOp(ctx.registry, replicaTargets(specs), true, commit);
  return specs;
}

const replicaTargets = (specs: ReplicaSpec[]) => specs.map((r) => ({ kind: 'replica' as const, id: r.uuid }));

/**
 * addReplicas without the commit write: the replicas are made (and added to the nexus), and the
 * write that commits them is returned so that scale commits them with its replica count at once.
 */
async function makeReplicas(
  ctx: CoreContext,
  volume: VolumeSpec,
  count: number,
  avoidNodes: string[],
): Promise<{ specs: ReplicaSpec[]; commit: SpecChange }> {
  const { registry, config } = ctx;
  const replicas = registry.volumeReplicas(volume.uuid);
  const holders = replicas.map((r) => registry.replicaNode(r)).filter((n): n is string => !!n);
  await refreshSpace(ctx, replicas);
  // The new replica is rebuilt with what the volume's replicas hold: its pool must have room for it.
  const allocated = Math.max(0, ...replicas.map((r) => registry.replicaState(r)?.allocated ?? 0));
  const pools = placeReplicas(registry.poolViews(), registry.nodeViews(), {
    size: volume.size,
    thin: volume.thin,
    count,
    allocated,
    topology: volume.topology,
    excludeNodes: holders,
    avoidNodes,
    poolCommitmentPercent: config.poolCommitmentPercent,
    volumeCommitmentPercent: config.volumeCommitmentPercent,
  });
  const specs = pools.map((p) => newReplicaSpec(volume, p.id));
  await registry.persist({ replicas: specs });
  const { created, failed, error } = await createOnEngines(ctx, specs);
  if (failed.length) {
    const { destroyed } = await destroyReplicasQuietly(ctx, created);
    await rollbackOp(registry, replicaTargets(specs), {
      deleteReplicas: destroyed.map((r) => r.uuid),
      replicas: specs.filter((r) => !destroyed.includes(r)).map(leftToGc),
    });
    throw toSvcError(error);
  }
  for (const r of specs) {
    r.status = { Created: 'online' };
    r.operation = null;
  }
  const nexus = activeNexus(ctx, volume);
  const nexusCopy = nexus ? cloneSpec(nexus) : undefined;
  if (nexusCopy) {
    const engine = ctx.engines.get(nexusCopy.node);
    for (const r of specs) {
      const uri = await childUri(ctx, r, nexusCopy.node);
      const st = await engine.addChild(nexusCopy.uuid, uri);
      registry.setNexusState(nexusCopy.node, st);
      nexusCopy.children.push({ Replica: { uuid: r.uuid, share_uri: uri } });
    }
  }
  const commit: SpecChange = {
    replicas: specs,
    nexuses: nexusCopy ? [nexusCopy] : [],
    events: specs.map((r) =>
      makeEvent(
        'replica',
        r.uuid,
        'Created',
        `replica of volume ${volume.uuid} on pool ${r.pool}${nexusCopy ? ' (rebuilding)' : ''}`,
      ),
    ),
  };
  return { specs, commit };
}

/**
 * What the pools hold and what the volume's replicas hold, asked of the io-engines now: the polled
 * figures may be a cache period old, and writes since then (a volume filled just before a scale)
 * made a pool look empty. A rebuild placed on that view filled the pool, failed, and left the thin
 * volumes already there without room for their writes. What cannot be asked stays as polled.
 */
async function refreshSpace(ctx: CoreContext, replicas: ReplicaSpec[]): Promise<void> {
  const { registry, engines } = ctx;
  const online = registry.nodeViews().filter((n) => n.online);
  await Promise.all([
    ...online.map(async ({ id }) => {
      const pools = await briefly(engines.tryGet(id)?.listPools());
      for (const p of pools ?? []) registry.poolStates.set(p.id, p);
    }),
    ...replicas.map(async (r) => {
      const node = registry.replicaNode(r);
      const st = node ? await briefly(engines.tryGet(node)?.getReplica(r.uuid)) : null;
      if (st) registry.setReplicaState(node!, st);
    }),
  ]);
}

/**
 * How long placement waits for an io-engine's fresh figures: one that hangs (stopped, cut off)
 * would otherwise hold every scale and self-heal step for a whole request timeout.
 */
const FRESH_SPACE_WAIT_MS = 1000;

/** The answer, or null when it fails or takes longer than FRESH_SPACE_WAIT_MS. */
async function briefly<T>(answer: Promise<T> | undefined): Promise<T | null> {
  if (!answer) return null;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), FRESH_SPACE_WAIT_MS);
  });
  try {
    return await Promise.race([answer.catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Remove replicas from a volume: out of the nexus first, then destroyed (or left disowned to GC). */
export async function removeReplicas(
  ctx: CoreContext,
  volume: VolumeSpec,
  victims: ReplicaSpec[],
  reason: string,
): Promise<void> {
  const { registry } = ctx;
  const nexus = activeNexus(ctx, volume);
  const nexusCopy = nexus ? cloneSpec(nexus) : undefined;
  if (nexusCopy) {
    const engine = ctx.engines.tryGet(nexusCopy.node);
    for (const r of victims) {
      const child = nexusCopy.children.find((c) => 'Replica' in c && c.Replica.uuid === r.uuid);
      if (!child) continue;
      if (engine) {
        const uri = 'Replica' in child ? child.Replica.share_uri : child.Uri;
        await engine.removeChild(nexusCopy.uuid, uri).catch((err) => {
          if (toSvcError(err).kind !== 'NotFound') throw err;
        });
      }
      nexusCopy.children = nexusCopy.children.filter((c) => c !== child);
    }
  }
  const disowned = victims.map(leftToGc);
  // Removed from the volume here, so said here: the destroy below may wait out the request timeout
  // on a dead node (its event then came seconds after the volume no longer listed the replica) or
  // never happen (a crash leaves the disowned replica to the GC).
  await registry.persist({
    replicas: disowned,
    nexuses: nexusCopy ? [nexusCopy] : [],
    events: victims.map((r) =>
      makeEvent('replica', r.uuid, 'Removed', `from volume ${volume.uuid}: ${reason}`),
    ),
  });
  const { destroyed } = await destroyReplicasQuietly(ctx, victims);
  await registry.persist({ deleteReplicas: destroyed.map((r) => r.uuid) });
}

/**
 * Pick replicas to drop on scale-down: ones not up to date first (being rebuilt, faulted: dropping
 * them loses nothing), then offline ones, then ones not local to the target. Refused when no up-to-
 * date replica would be left: the others' data is incomplete.
 */
export async function scaleDownVictims(
  ctx: CoreContext,
  volume: VolumeSpec,
  count: number,
): Promise<ReplicaSpec[]> {
  const { registry } = ctx;
  const current = await upToDateReplicas(ctx, volume);
  const targetNode = volumeTargetNode(volume) ?? undefined;
  // After health: replicas on cordoned nodes go first, so `node cordon N`, a scale up and a scale
  // down move a volume's replica off N (how a pool is emptied before `pool delete`).
  const onCordoned = (r: ReplicaSpec) => {
    const node = registry.nodes.get(registry.replicaNode(r) ?? '');
    return node !== undefined && isCordoned(node);
  };
  const rank = (r: ReplicaSpec) =>
    (current.has(r.uuid) ? 8 : 0) +
    (replicaOnline(registry, r) ? 4 : 0) +
    (onCordoned(r) ? 0 : 2) +
    (registry.replicaNode(r) === targetNode ? 1 : 0);
  const ranked = registry
    .volumeReplicas(volume.uuid)
    .sort((a, b) => rank(a) - rank(b) || a.uuid.localeCompare(b.uuid));
  const kept = ranked.slice(count);
  if (!kept.some((r) => current.has(r.uuid)))
    throw new SvcError(
      'FailedPrecondition',
      `cannot scale volume '${volume.uuid}' down: no replica holding its latest data would be left (the others are being rebuilt or faulted); wait for the rebuild`,
      'LastHealthyReplica',
    );
  return ranked.slice(0, count);
}

/** PUT /volumes/{id}/replica_count/{n}. */
export async function scaleVolume(ctx: CoreContext, uuid: string, replicas: number): Promise<VolumeSpec> {
  const { registry } = ctx;
  return registry.exclusive('volume', uuid, async () => {
    const volume = registry.volume(uuid);
    checkUsable(volume);
    if (replicas === volume.num_replicas) {
      throw new SvcError(
        'FailedPrecondition',
        `volume '${uuid}' already has ${replicas} replica(s)`,
        'ReplicaCountAchieved',
      );
    }
    if (Math.abs(replicas - volume.num_replicas) !== 1) {
      throw new SvcError(
        'FailedPrecondition',
        `replica count can only change by one at a time (now ${volume.num_replicas})`,
        'ReplicaChangeCount',
      );
    }
    volume.operation = { operation: { SetReplica: replicas }, result: null };
    await registry.persist({ volumes: [volume] });
    let added: { specs: ReplicaSpec[]; commit: SpecChange } | undefined;
    try {
      const have = registry.volumeReplicas(uuid).length;
      if (replicas > volume.num_replicas && have < replicas)
        added = await makeReplicas(ctx, volume, replicas - have, []);
      else if (replicas < volume.num_replicas && have > replicas) {
        const healthy = registry.volumeReplicas(uuid).filter((r) => replicaOnline(registry, r));
        const victims = await scaleDownVictims(ctx, volume, have - replicas);
        if (healthy.every((r) => victims.includes(r)))
          throw new SvcError(
            'FailedPrecondition',
            'cannot remove the last healthy replica',
            'LastHealthyReplica',
          );
        await removeReplicas(ctx, volume, victims, `scaled down to ${replicas}`);
      }
    } catch (err) {
      volume.operation = null;
      await rollbackOp(registry, { kind: 'volume', id: uuid }, { volumes: [volume] });
      throw err;
    }
    volume.num_replicas = replicas;
    volume.operation = null;
    // One write commits the new replicas and the replica count: the io-engine work is done, so a
    // failed write leaves the scale dirty with result true and it is completed, never undone
    // (docs/mayastor-compat.md §1.5).
    await settleOp(registry, [{ kind: 'volume', id: uuid }, ...replicaTargets(added?.specs ?? [])], true, {
      ...added?.commit,
      volumes: [volume],
      events: [
        ...(added?.commit.events ?? []),
        makeEvent('volume', uuid, 'Scaled', `replica count set to ${replicas}`),
      ],
    });
    return volume;
  });
}

/**
 * Refuse a resize some replica's pool cannot hold, before any replica grows: a grown replica
 * cannot shrink back, so a pool found too small half-way left the others grown for nothing. No
 * pool may be smaller than the new size (thin replicas too, as at placement; a pool's capacity is
 * fixed, so core's polled figure serves), and the pools of thick replicas need room for what they
 * grow by: that is asked of the io-engines now (core's pool state may be a poll old); they check
 * it again.
 */
async function checkGrowthFits(
  ctx: CoreContext,
  volume: string,
  replicas: ReplicaSpec[],
  size: number,
): Promise<void> {
  const refuse = (why: string) =>
    new SvcError(
      'ResourceExhausted',
      `volume '${volume}' not resized: ${why}; no replica was grown`,
      'PoolCapacity',
    );
  /** Node → pool → bytes its thick replicas of this volume grow by. */
  const needs = new Map<string, Map<string, number>>();
  for (const r of replicas) {
    if (r.size >= size) continue;
    const node = ctx.registry.replicaNode(r)!;
    const pool = replicaPoolName(r);
    const capacity = ctx.registry.poolStates.get(pool)?.capacity;
    if (capacity !== undefined && capacity < size)
      throw refuse(
        `pool '${pool}' on node '${node}' holds ${capacity} bytes, less than the new size of ${size} bytes`,
      );
    if (r.thin) continue;
    const pools = needs.get(node) ?? new Map<string, number>();
    pools.set(pool, (pools.get(pool) ?? 0) + size - r.size);
    needs.set(node, pools);
  }
  for (const [node, pools] of needs) {
    const reported = await ctx.engines.get(node).listPools();
    for (const [pool, bytes] of pools) {
      const free = reported.find((p) => p.id === pool)?.free;
      if (free === undefined || free >= bytes) continue;
      throw refuse(
        `pool '${pool}' on node '${node}' has ${free} bytes free, its replica needs ${bytes} more to grow to ${size} bytes`,
      );
    }
  }
}

/**
 * Grow one replica to `size`; returns its size afterwards. The io-engine refuses to shrink: a replica
 * its spec records smaller than it is (a crash rolled back its pending Resize after it grew) may
 * already be larger than `size`, which is fine.
 */
async function growReplica(ctx: CoreContext, r: ReplicaSpec, size: number): Promise<number> {
  const engine = ctx.engines.get(ctx.registry.replicaNode(r)!);
  try {
    await engine.resizeReplica(r.uuid, size);
    return size;
  } catch (err) {
    if (toSvcError(err).kind !== 'InvalidArgument') throw err;
    const actual = (await engine.listReplicas()).find((x) => x.uuid === r.uuid);
    if (actual && actual.size >= size) return actual.size;
    throw err;
  }
}

/** Grow the live nexus to `size`; one a crashed resize left larger stays so (it cannot shrink). */
async function growNexus(ctx: CoreContext, nexus: NexusSpec, size: number): Promise<number> {
  const engine = ctx.engines.get(nexus.node);
  try {
    await engine.resizeNexus(nexus.uuid, size);
    return size;
  } catch (err) {
    if (toSvcError(err).kind !== 'InvalidArgument') throw err;
    const actual = await engine.getNexus(nexus.uuid);
    if (actual.size >= size) return actual.size;
    throw err;
  }
}

/**
 * PUT /volumes/{id}/size: grow every replica, then the nexus if the volume is published (online
 * expansion); shrinking is refused (406 VolumeResizeSize).
 *
 * Crash safety (docs/mayastor-compat.md §1.5): the volume and every replica carry `{"Resize":size}`
 * before any io-engine call. Replicas cannot shrink, so a failure after some replicas grew is not undone: the grown
 * replicas are committed at their new size (their action succeeded: result true), the others and the
 * volume are rolled back (the volume keeps its size), and the same request again completes the
 * resize (growing a replica or nexus to the size it already has is a no-op; one already larger is
 * left so). A crash mid-way rolls
 * every pending Resize back; the retry then grows what is left and commits all of it.
 * NBD clients connected to the target keep the old size until they reconnect (NBD has no resize
 * notification); new connections see the new size.
 */
export async function resizeVolume(ctx: CoreContext, uuid: string, size: number): Promise<VolumeSpec> {
  const { registry, engines } = ctx;
  return registry.exclusive('volume', uuid, async () => {
    const volume = registry.volume(uuid);
    checkUsable(volume);
    if (size <= volume.size)
      throw new SvcError(
        'NotAcceptable',
        `new size ${size} (${humanizeBytes(size)}) must be larger than the current ${volume.size} (${humanizeBytes(volume.size)}): a volume only grows`,
        'VolumeResizeSize',
      );
    const replicas = registry.volumeReplicas(uuid).map((r) => cloneSpec(r));
    const offline = replicas.filter((r) => !replicaOnline(registry, r));
    if (offline.length)
      throw new SvcError(
        'FailedPrecondition',
        `replica(s) ${offline.map((r) => r.uuid).join(', ')} are not online; resize needs every replica`,
      );
    const busy = replicas.find((r) => r.operation);
    if (busy) throw dirty('replica', busy.uuid);
    const nexus = activeNexus(ctx, volume);
    // The target's node must be reachable before any replica grows (an online resize ends there).
    if (nexus) engines.get(nexus.node);
    await checkGrowthFits(ctx, uuid, replicas, size);
    volume.operation = { operation: { Resize: size }, result: null };
    for (const r of replicas) r.operation = { operation: { Resize: size }, result: null };
    await registry.persist({ volumes: [volume], replicas });
    const volumeTarget: OpTarget = { kind: 'volume', id: uuid };
    const grown: ReplicaSpec[] = [];
    let nexusSize = size;
    try {
      for (const r of replicas) {
        // A replica left larger by an earlier incomplete resize is big enough as it is.
        if (r.size < size) r.size = await growReplica(ctx, r, size);
        grown.push(r);
        markResult(registry, { kind: 'replica', id: r.uuid }, true);
      }
      if (nexus) nexusSize = await growNexus(ctx, nexus, size);
    } catch (err) {
      // Grown replicas keep their size (they cannot shrink): committed; the rest rolled back.
      const rest = replicas.filter((r) => !grown.includes(r));
      const incomplete = `${grown.length}/${replicas.length} replica(s) grown to ${size} bytes${nexus ? ', target not' : ''}; resize again to complete`;
      await rollbackOp(
        registry,
        [volumeTarget, ...rest.map((r) => ({ kind: 'replica' as const, id: r.uuid }))],
        {
          volumes: [{ ...volume, operation: null }],
          replicas: [
            ...grown.map((r) => ({ ...r, operation: null })),
            ...rest.map((r) => ({ ...r, operation: null })),
          ],
          events: grown.length ? [makeEvent('volume', uuid, 'ResizeIncomplete', incomplete)] : [],
        },
      );
      const failed = toSvcError(err);
      // The caller hears what the event says: the volume is left part grown, and how to finish.
      const message = grown.length ? `${failed.message}; ${incomplete}` : failed.message;
      throw new SvcError(stepFailureKind(failed.kind), message, failed.details);
    }
    volume.size = size;
    volume.operation = null;
    await settleOp(registry, [volumeTarget, ...replicaTargets(replicas)], true, {
      volumes: [volume],
      replicas: replicas.map((r) => ({ ...r, operation: null })),
      nexuses: nexus ? [{ ...nexus, size: nexusSize }] : [],
      events: [
        makeEvent('volume', uuid, 'Resized', `to ${size} bytes${nexus ? ' (online, target grown)' : ''}`),
      ],
    });
    return volume;
  });
}
