import { randomUUID } from 'node:crypto';
import { poolRefName, type ReplicaSpec, type VolumeSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import type { Registry } from '../registry.js';
import type { CreateVolumeBody } from '../rest/validate.js';
import { type PoolView, placeReplicas } from '../scheduler.js';
import { SvcError, stepFailureKind, toSvcError } from '../svc-error.js';
import { createDifferences, settleDirtyVolume } from './converge.js';
import { rollbackOp, settleOp } from './settle.js';

export function newReplicaSpec(volume: VolumeSpec, pool: string): ReplicaSpec {
  const uuid = randomUUID();
  return {
    name: uuid,
    uuid,
    size: volume.size,
    pool,
    share: 'none',
    thin: volume.thin,
    status: 'Creating',
    managed: true,
    owners: { volume: volume.uuid, disown_all: false },
    operation: { operation: 'Create', result: null },
    allowed_hosts: [],
  };
}

/** Create logged replica specs on their io-engines, in parallel; `error`: the first failure. */
export async function createOnEngines(
  ctx: CoreContext,
  specs: ReplicaSpec[],
): Promise<{
  created: ReplicaSpec[];
  failed: ReplicaSpec[];
  error?: unknown;
  errors: Map<ReplicaSpec, unknown>;
}> {
  const { registry, engines } = ctx;
  const results = await Promise.allSettled(
    specs.map(async (r) => {
      const node = registry.replicaNode(r)!;
      const st = await engines
        .get(node)
        .createReplica({ uuid: r.uuid, pool: r.pool as string, size: r.size, thin: r.thin });
      registry.setReplicaState(node, st);
    }),
  );
  const created: ReplicaSpec[] = [];
  const failed: ReplicaSpec[] = [];
  const errors = new Map<ReplicaSpec, unknown>();
  let error: unknown;
  results.forEach((res, i) => {
    if (res.status === 'fulfilled') created.push(specs[i]);
    else {
      failed.push(specs[i]);
      errors.set(specs[i], res.reason);
      error ??= res.reason;
    }
  });
  return { created, failed, error, errors };
}

/**
 * A replica spec kept for the replica GC, disowned and Deleting: the GC destroys the replica, if
 * there is one, and then drops the spec. For replicas a failed operation made and could not destroy,
 * and for creates that failed: a create whose answer was lost (a timeout, a cut network) may be
 * carried out after all once its request gets through, and would leave a replica no spec names.
 */
export function leftToGc(r: ReplicaSpec): ReplicaSpec {
  return { ...r, status: 'Deleting', owners: { volume: null, disown_all: true }, operation: null };
}

/** Best-effort destroy of replicas created by a failed operation; those that fail are left to GC. */
export async function destroyReplicasQuietly(
  ctx: CoreContext,
  specs: ReplicaSpec[],
): Promise<{ destroyed: ReplicaSpec[]; left: ReplicaSpec[] }> {
  const destroyed: ReplicaSpec[] = [];
  const left: ReplicaSpec[] = [];
  await Promise.all(
    specs.map(async (r) => {
      try {
        const node = ctx.registry.replicaNode(r);
        if (!node) throw new Error('pool unknown');
        await ctx.engines.get(node).destroyReplica(r.uuid, r.pool as string);
        ctx.registry.dropReplicaState(node, r.uuid);
        destroyed.push(r);
      } catch (err) {
        if (toSvcError(err).kind === 'NotFound') destroyed.push(r);
        else left.push(r);
      }
    }),
  );
  return { destroyed, left };
}

/** Commit a create: volume and replicas Created, their operations cleared, one store write with its event. */
export async function commitCreated(
  registry: Registry,
  volume: VolumeSpec,
  replicas: ReplicaSpec[],
  event: ReturnType<typeof makeEvent>,
): Promise<void> {
  volume.status = { Created: 'Online' };
  volume.operation = null;
  for (const r of replicas) {
    r.status = { Created: 'online' };
    r.operation = null;
  }
  await settleOp(
    registry,
    [{ kind: 'volume', id: volume.uuid }, ...replicas.map((r) => ({ kind: 'replica' as const, id: r.uuid }))],
    true,
    { volumes: [volume], replicas, events: [event] },
  );
}

/**
 * A new volume spec, status Creating with its Create operation recorded: the intent is stored
 * before any io-engine is touched (docs/mayastor-compat.md §1.5). `overrides` serve clones (thin, content source).
 */
export function newVolumeSpec(
  uuid: string,
  body: CreateVolumeBody,
  overrides: Partial<VolumeSpec> = {},
): VolumeSpec {
  return {
    uuid,
    size: body.size,
    labels: body.labels,
    num_replicas: body.replicas,
    status: 'Creating',
    policy: body.policy,
    topology: body.topology,
    last_nexus_id: null,
    operation: { operation: 'Create', result: null },
    thin: body.thin,
    target: null,
    publish_context: null,
    affinity_group: body.affinity_group,
    ...(body.max_snapshots !== undefined ? { max_snapshots: body.max_snapshots } : {}),
    ...overrides,
  };
}

/**
 * A create of an id that exists: the existing volume when it was created with the same parameters (a
 * retried request converges), else a conflict that names what differs.
 */
export function sameVolume(existing: VolumeSpec, wanted: VolumeSpec): VolumeSpec {
  const uuid = existing.uuid;
  if (existing.status === 'Deleting' || existing.status === 'Deleted')
    throw new SvcError('Deleting', `volume '${uuid}' is being deleted; retry once it is gone`);
  const diff = createDifferences(existing, wanted);
  if (diff.length)
    throw new SvcError(
      'AlreadyExists',
      `volume '${uuid}' already exists with different parameters (${diff.join('; ')}); delete it first or use another id`,
      `volume ${uuid} exists: ${diff.join('; ')}`,
    );
  if (existing.status === 'Creating')
    throw new SvcError('Conflict', `volume '${uuid}' is still being created; retry`, `volume ${uuid} busy`);
  return existing;
}

/**
 * Volume creation (seed 001): validate → schedule → log Create in the volume and replica specs →
 * create the replicas → commit. Two store transactions per create. On failure everything created is
 * destroyed again (or left disowned for the replica GC) and the specs are removed.
 */
export async function createVolume(
  ctx: CoreContext,
  uuid: string,
  body: CreateVolumeBody,
): Promise<VolumeSpec> {
  const { registry, config } = ctx;
  return registry.exclusive('volume', uuid, async () => {
    // A retry of a create answered 507 whose commit write failed: settle it now if the store is back.
    await settleDirtyVolume(registry, uuid);
    const volume = newVolumeSpec(uuid, body);
    const existing = registry.volumes.get(uuid);
    if (existing) return sameVolume(existing, volume);
    const placement = {
      size: body.size,
      thin: body.thin,
      count: body.replicas,
      topology: body.topology,
      poolCommitmentPercent: config.poolCommitmentPercent,
      volumeCommitmentPercent: config.volumeCommitmentPercent,
    };
    const pools = placeReplicas(registry.poolViews(), registry.nodeViews(), placement);
    const replicas = pools.map((p) => newReplicaSpec(volume, p.id));
    await registry.persist({ volumes: [volume], replicas });

    const { created, failed, error, skipped } = await createPlacedElsewhere(
      ctx,
      volume,
      placement,
      await createOnEngines(ctx, replicas),
    );
    const tried = skipped.length ? ` (skipped ${skipped.join('; ')})` : '';
    if (failed.length > 0) {
      const { destroyed } = await destroyReplicasQuietly(ctx, created);
      const why = toSvcError(error);
      await rollbackOp(
        registry,
        { kind: 'volume', id: uuid },
        {
          deleteVolumes: [uuid],
          deleteReplicas: destroyed.map((r) => r.uuid),
          replicas: [...failed, ...created.filter((r) => !destroyed.includes(r))].map(leftToGc),
          events: [makeEvent('volume', uuid, 'CreateFailed', why.message)],
        },
      );
      throw new SvcError(
        stepFailureKind(why.kind),
        `volume '${uuid}' not created: replica creation failed: ${why.message}${tried}`,
        why.details,
      );
    }
    await commitCreated(
      registry,
      volume,
      created,
      makeEvent(
        'volume',
        uuid,
        'Created',
        `${body.replicas} replica(s) of ${body.size} bytes on ${created.map((r) => registry.replicaNode(r)).join(', ')}${tried}`,
      ),
    );
    return volume;
  });
}

/**
 * Replicas whose pool failed their create (its io-engine not answering, the pool not imported since
 * a restart, fuller than last polled) go to the next pools placement offers, on nodes the volume
 * has no replica on yet, while there are any (as upstream tries its candidates in turn): a create
 * succeeds if enough pools can take it. The failed specs are handed to the replica GC (leftToGc) in
 * the store write that logs the new attempt's, so a crash leaves only specs whose Create is logged,
 * and a create that timed out but was carried out later leaves no replica behind. `skipped`: each
 * pool passed over and why.
 */
async function createPlacedElsewhere(
  ctx: CoreContext,
  volume: VolumeSpec,
  placement: Parameters<typeof placeReplicas>[2],
  first: Awaited<ReturnType<typeof createOnEngines>>,
): Promise<{ created: ReplicaSpec[]; failed: ReplicaSpec[]; error?: unknown; skipped: string[] }> {
  const { registry, log } = ctx;
  let { created, failed, error, errors } = first;
  const skipped: string[] = [];
  const tried = new Set([...created, ...failed].map((r) => poolRefName(r.pool)));
  while (failed.length > 0) {
    const usedNodes = new Set(created.map((r) => registry.replicaNode(r)));
    const candidates = registry.poolViews().filter((p) => !tried.has(p.id) && !usedNodes.has(p.node));
    let pools: PoolView[];
    try {
      pools = placeReplicas(candidates, registry.nodeViews(), { ...placement, count: failed.length });
    } catch {
      break; // no other pool can take them: the create fails with the last error, naming those skipped
    }
    for (const r of failed) {
      const why = toSvcError(errors.get(r)).message;
      skipped.push(`${poolRefName(r.pool)}: ${why}`);
      log.warn(
        { volume: volume.uuid, pool: poolRefName(r.pool), err: why },
        'replica placed on another pool',
      );
    }
    for (const p of pools) tried.add(p.id);
    const next = pools.map((p) => newReplicaSpec(volume, p.id));
    await registry.persist({ replicas: [...next, ...failed.map(leftToGc)] });
    const again = await createOnEngines(ctx, next);
    created = [...created, ...again.created];
    ({ failed, error, errors } = again);
  }
  return { created, failed, error, skipped };
}
