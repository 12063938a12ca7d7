import { isLocalUri, localReplicaUri } from '../../../lib/child-uri.js';
import {
  childReplicaUuid,
  childUri,
  cloneSpec,
  isCreated,
  type PoolSpec,
  poolRefName,
  type ReplicaOperation,
  type ReplicaSpec,
} from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { dirty, SvcError, toSvcError } from '../svc-error.js';
import { retrySettle, rollbackOp, settleOp } from './settle.js';

/**
 * Replicas made and destroyed by an operator through REST (`/pools/{pool}/replicas/{replica}`), as
 * Mayastor's replica endpoints do: unmanaged specs (no volume owns them, the replica GC leaves them
 * alone), every step logged in the spec before the io-engine acts (docs/mayastor-compat.md §1.5).
 */

export interface ReplicaRef {
  uuid: string;
  pool: string;
  /** Set by the node-scoped endpoints: the pool must be on this node. */
  node?: string;
}

export interface CreateReplicaRequest extends ReplicaRef {
  size: number;
  thin: boolean;
  share: 'none' | 'nbd';
  allowedHosts: string[];
}

const logged = (operation: ReplicaOperation) => ({ operation, result: null });

function poolOf(ctx: CoreContext, id: string, node?: string): PoolSpec {
  const p = ctx.registry.pools.get(id);
  if (!p || (node && p.node !== node))
    throw new SvcError(
      'NotFound',
      `pool '${id}' not found${node ? ` on node '${node}'` : ''}`,
      `The Pool '${id}' was not found`,
    );
  return p;
}

/** The replica spec named by `ref`, NotFound when it is not in that pool (on that node). */
export function replicaAt(ctx: CoreContext, ref: ReplicaRef): ReplicaSpec {
  const pool = poolOf(ctx, ref.pool, ref.node);
  const r = ctx.registry.replicas.get(ref.uuid);
  if (!r || poolRefName(r.pool) !== pool.id)
    throw new SvcError(
      'NotFound',
      `replica '${ref.uuid}' not found in pool '${pool.id}'`,
      `The Replica '${ref.uuid}' was not found`,
    );
  return r;
}

/** Nexus specs that use the replica as a child (its nexus owners, re-derived as Mayastor does). */
function nexusUsers(ctx: CoreContext, uuid: string): string[] {
  return [...ctx.registry.nexuses.values()]
    .filter((n) => n.children.some((c) => childReplicaUuid(c) === uuid))
    .map((n) => n.uuid);
}

/** How the replica is shared: the spec, or the io-engine's word (volume ops share without recording it). */
function sharedAs(ctx: CoreContext, r: ReplicaSpec, node: string): string {
  const st = ctx.registry.replicaStates.get(node)?.get(r.uuid);
  return r.share !== 'none' ? r.share : (st?.share ?? 'none');
}

export async function createReplica(ctx: CoreContext, req: CreateReplicaRequest): Promise<ReplicaSpec> {
  const { registry, engines } = ctx;
  return registry.exclusive('replica', req.uuid, async () => {
    const pool = poolOf(ctx, req.pool, req.node);
    // A retry of a create answered 507 whose commit write failed: written now if the store is back.
    if (registry.replicas.get(req.uuid)?.operation) {
      await retrySettle(registry, { kind: 'replica', id: req.uuid }, []).catch(() => false);
      if (registry.replicas.get(req.uuid)?.operation) throw dirty('replica', req.uuid);
    }
    const existing = registry.replicas.get(req.uuid);
    if (existing) {
      if (!isCreated(existing.status))
        throw new SvcError('Deleting', `replica '${req.uuid}' is being deleted; retry once it is gone`);
      // The same request again (a retry) returns the replica it made; anything else is a conflict.
      const diff = [
        poolRefName(existing.pool) !== pool.id && `pool is '${poolRefName(existing.pool)}'`,
        existing.size !== req.size && `size is ${existing.size}`,
        existing.thin !== req.thin && `thin is ${existing.thin}`,
        existing.share !== req.share && `share is '${existing.share}'`,
        (existing.managed || existing.owners.volume) && 'it belongs to a volume',
      ].filter(Boolean);
      if (diff.length)
        throw new SvcError(
          'AlreadyExists',
          `replica '${req.uuid}' already exists with different parameters (${diff.join(', ')}); use another id`,
        );
      return existing;
    }
    if (!isCreated(pool.status))
      throw new SvcError('FailedPrecondition', `pool '${pool.id}' is not created yet`, 'PendingCreation');
    const engine = engines.get(pool.node);
    const spec: ReplicaSpec = {
      name: req.uuid,
      uuid: req.uuid,
      size: req.size,
      pool: pool.id,
      share: 'none',
      thin: req.thin,
      status: 'Creating',
      managed: false,
      owners: { volume: null, disown_all: false },
      operation: logged('Create'),
      allowed_hosts: req.allowedHosts,
    };
    await registry.persist({ replicas: [spec] });
    let made = false;
    try {
      const state = await engine.createReplica({
        uuid: req.uuid,
        pool: pool.id,
        size: req.size,
        thin: req.thin,
      });
      made = true;
      if (req.share === 'nbd') {
        state.uri = await engine.shareReplica(req.uuid);
        state.share = 'nbd';
      }
      registry.setReplicaState(pool.node, state);
    } catch (err) {
      // Roll back what this request made. A failed create is not destroyed: the replica may be
      // someone else's (AlreadyExists); one left half-made without a spec is removed by the GC.
      let gone = !made;
      if (made)
        gone = await engine.destroyReplica(req.uuid, pool.id).then(
          () => true,
          (e) => toSvcError(e).kind === 'NotFound',
        );
      await rollbackOp(
        registry,
        { kind: 'replica', id: req.uuid },
        gone
          ? { deleteReplicas: [req.uuid] }
          : { replicas: [{ ...spec, status: 'Deleting', operation: null }] },
      );
      throw err;
    }
    spec.share = req.share;
    spec.status = { Created: 'online' };
    spec.operation = null;
    // Made on the io-engine: a failed commit write is completed later, never undone
    // (docs/mayastor-compat.md §1.5).
    await settleOp(registry, { kind: 'replica', id: req.uuid }, true, {
      replicas: [spec],
      events: [
        makeEvent('replica', req.uuid, 'Created', `in pool ${pool.id} (${req.size} bytes, unmanaged)`),
      ],
    });
    return spec;
  });
}

/** Destroy an operator's replica; one owned by a volume or used by a nexus is InUse (409). */
export async function deleteReplica(ctx: CoreContext, ref: ReplicaRef): Promise<void> {
  const { registry, engines } = ctx;
  return registry.exclusive('replica', ref.uuid, async () => {
    const r = cloneSpec(replicaAt(ctx, ref));
    if (r.operation) throw dirty('replica', r.uuid);
    // A replica whose owning volume is gone is an orphan (the replica GC's, or `storctl orphans --delete`).
    if (r.owners.volume && registry.volumes.has(r.owners.volume))
      throw new SvcError(
        'InUse',
        `replica '${r.uuid}' is owned by volume '${r.owners.volume}'; scale or delete the volume instead`,
        `Replica ${r.uuid} is in use by volume ${r.owners.volume}`,
      );
    const users = nexusUsers(ctx, r.uuid);
    if (users.length)
      throw new SvcError(
        'InUse',
        `replica '${r.uuid}' is a child of nexus ${users.join(', ')}; remove it from the nexus first`,
        `Replica ${r.uuid} is in use by nexus ${users.join(', ')}`,
      );
    if (r.status === 'Creating')
      throw new SvcError(
        'FailedPrecondition',
        `replica '${r.uuid}' is still being created`,
        'PendingCreation',
      );
    const node = registry.replicaNode(r)!;
    const engine = engines.get(node);
    const before = r.status;
    await registry.persist({ replicas: [{ ...r, status: 'Deleting', operation: logged('Destroy') }] });
    try {
      await engine.destroyReplica(r.uuid, poolRefName(r.pool));
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') {
        await rollbackOp(
          registry,
          { kind: 'replica', id: r.uuid },
          { replicas: [{ ...r, status: before, operation: null }] },
        );
        throw err;
      }
    }
    registry.dropReplicaState(node, r.uuid);
    await settleOp(registry, { kind: 'replica', id: r.uuid }, true, {
      deleteReplicas: [r.uuid],
      events: [makeEvent('replica', r.uuid, 'Deleted', `from pool ${poolRefName(r.pool)}`)],
    });
  });
}

/** Share a replica over NBD so a nexus on another node can use it; returns its URI. */
export async function shareReplica(
  ctx: CoreContext,
  ref: ReplicaRef,
  allowedHosts: string[],
): Promise<string> {
  const { registry, engines } = ctx;
  return registry.exclusive('replica', ref.uuid, async () => {
    const r = cloneSpec(replicaAt(ctx, ref));
    if (r.operation) throw dirty('replica', r.uuid);
    if (!isCreated(r.status))
      throw new SvcError('FailedPrecondition', `replica '${r.uuid}' is not created`, 'PendingCreation');
    const node = registry.replicaNode(r)!;
    const shared = sharedAs(ctx, r, node);
    if (shared !== 'none')
      throw new SvcError('AlreadyShared', `replica '${r.uuid}' is already shared over ${shared}`);
    const engine = engines.get(node);
    await registry.persist({ replicas: [{ ...r, operation: logged({ Share: ['nbd', allowedHosts] }) }] });
    let uri: string;
    try {
      uri = await engine.shareReplica(r.uuid);
    } catch (err) {
      await rollbackOp(registry, { kind: 'replica', id: r.uuid }, { replicas: [{ ...r, operation: null }] });
      throw err;
    }
    const st = registry.replicaStates.get(node)?.get(r.uuid);
    if (st) registry.setReplicaState(node, { ...st, share: 'nbd', uri });
    await settleOp(registry, { kind: 'replica', id: r.uuid }, true, {
      replicas: [{ ...r, share: 'nbd', allowed_hosts: allowedHosts, operation: null }],
      events: [makeEvent('replica', r.uuid, 'Shared', `over nbd as ${uri}`)],
    });
    return uri;
  });
}

/** Stop sharing; refused (InUse) while a nexus uses the replica through its share. */
export async function unshareReplica(ctx: CoreContext, ref: ReplicaRef): Promise<void> {
  const { registry, engines } = ctx;
  return registry.exclusive('replica', ref.uuid, async () => {
    const r = cloneSpec(replicaAt(ctx, ref));
    if (r.operation) throw dirty('replica', r.uuid);
    const node = registry.replicaNode(r)!;
    if (sharedAs(ctx, r, node) === 'none')
      throw new SvcError('NotShared', `replica '${r.uuid}' is not shared`);
    const remoteUsers = [...registry.nexuses.values()].filter((n) =>
      n.children.some((c) => childReplicaUuid(c) === r.uuid && !isLocalUri(childUri(c))),
    );
    if (remoteUsers.length)
      throw new SvcError(
        'InUse',
        `replica '${r.uuid}' is a child of nexus ${remoteUsers.map((n) => n.uuid).join(', ')} through its share; remove it from the nexus first`,
      );
    const engine = engines.get(node);
    await registry.persist({ replicas: [{ ...r, operation: logged('Unshare') }] });
    try {
      await engine.unshareReplica(r.uuid);
    } catch (err) {
      await rollbackOp(registry, { kind: 'replica', id: r.uuid }, { replicas: [{ ...r, operation: null }] });
      throw err;
    }
    const st = registry.replicaStates.get(node)?.get(r.uuid);
    if (st) registry.setReplicaState(node, { ...st, share: 'none', uri: localReplicaUri(r.uuid) });
    await settleOp(registry, { kind: 'replica', id: r.uuid }, true, {
      replicas: [{ ...r, share: 'none', operation: null }],
      events: [makeEvent('replica', r.uuid, 'Unshared', 'NBD export removed')],
    });
  });
}
