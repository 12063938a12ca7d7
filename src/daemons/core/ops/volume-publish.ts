import { isCreated, newTargetConfig, type VolumeSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import type { Registry } from '../registry.js';
import type { PublishVolumeBody } from '../rest/validate.js';
import { chooseTargetNode } from '../scheduler.js';
import {
  dirty,
  HUNG_ENGINE_WAIT_MS,
  SvcError,
  stepFailureKind,
  toSvcError,
  withDeadline,
} from '../svc-error.js';
import { fenceNexus } from './fence.js';
import { buildAndShareNexus, newNexusSpec, unreachedChildren, usableReplicas } from './nexus-build.js';
import { rollbackOp, settleOp } from './settle.js';

export function checkUsable(volume: VolumeSpec): void {
  if (volume.operation) throw dirty('volume', volume.uuid);
  if (volume.status === 'Creating')
    throw new SvcError(
      'FailedPrecondition',
      `volume '${volume.uuid}' is still being created`,
      'PendingCreation',
    );
  if (!isCreated(volume.status))
    throw new SvcError('FailedPrecondition', `volume '${volume.uuid}' is being deleted`, 'PendingDeletion');
}

/**
 * Publish (seed 001): create a nexus from the healthy replicas on the requested (or chosen) node and
 * share it over NBD. The Publish intent and the Creating nexus spec are stored first; on failure the
 * nexus is destroyed again and both are rolled back.
 */
export async function publishVolume(
  ctx: CoreContext,
  uuid: string,
  body: PublishVolumeBody,
): Promise<VolumeSpec> {
  const { registry } = ctx;
  return registry.exclusive('volume', uuid, async () => {
    const volume = registry.volume(uuid);
    checkUsable(volume);
    if (volume.target?.active !== false && volume.target) {
      if (!body.republish) {
        throw new SvcError(
          'AlreadyPublished',
          `volume '${uuid}' is already published on node '${volume.target.node}'`,
        );
      }
      return republish(ctx, volume, body);
    }
    if (body.republish)
      throw new SvcError('NotPublished', `volume '${uuid}' is not published; publish it first`);
    const node = chooseTargetNode(registry.nodeViews(), onlineReplicaNodes(registry, uuid), body.node);
    return publishOn(ctx, volume, node, body);
  });
}

async function publishOn(
  ctx: CoreContext,
  volume: VolumeSpec,
  node: string,
  body: PublishVolumeBody,
): Promise<VolumeSpec> {
  const { registry } = ctx;
  const replicas = await usableReplicas(ctx, volume, node);
  const nexus = newNexusSpec(volume, node);
  const config = newTargetConfig({
    node,
    nexus: nexus.uuid,
    protocol: body.protocol,
    frontendNode: body.frontend_node,
    previous: volume.target,
  });
  nexus.nvmf_config = config.config;
  volume.operation = {
    operation: { Publish2: { config, publish_context: body.publish_context } },
    result: null,
  };
  await registry.persist({ volumes: [volume], nexuses: [nexus] });
  let built: Awaited<ReturnType<typeof buildAndShareNexus>>;
  try {
    built = await buildAndShareNexus(ctx, volume, nexus, replicas, body.protocol);
  } catch (err) {
    const why = toSvcError(err);
    volume.operation = null;
    await rollbackOp(
      registry,
      [
        { kind: 'volume', id: volume.uuid },
        { kind: 'nexus', id: nexus.uuid },
      ],
      {
        volumes: [volume],
        deleteNexuses: [nexus.uuid],
        events: [
          makeEvent(
            'volume',
            volume.uuid,
            'PublishFailed',
            `on node ${node}: ${why.message}; nexus destroyed again`,
          ),
        ],
      },
    );
    throw new SvcError(
      stepFailureKind(why.kind),
      `publish of volume '${volume.uuid}' on node '${node}' failed: ${why.message}; the nexus was destroyed again`,
      why.details,
    );
  }
  const { state, children } = built;
  registry.setNexusState(node, state);
  nexus.children = children;
  nexus.spec_status = { Created: 'Online' };
  nexus.share = body.protocol;
  nexus.operation = null;
  volume.target = config;
  volume.last_nexus_id = nexus.uuid;
  volume.publish_context = body.publish_context;
  volume.operation = null;
  // The target is up: a failed commit write leaves the publish dirty with result true, and the
  // dirty-spec reconciler completes it once the store is back (never rolled back,
  // docs/mayastor-compat.md §1.5).
  await settleOp(
    registry,
    [
      { kind: 'volume', id: volume.uuid },
      { kind: 'nexus', id: nexus.uuid },
    ],
    true,
    {
      volumes: [volume],
      nexuses: [nexus],
      events: [
        makeEvent(
          'volume',
          volume.uuid,
          'Published',
          `target ${state.deviceUri} on node ${node}${unreachedChildren(state)}`,
        ),
      ],
    },
  );
  return volume;
}

/**
 * Move the target (HA switchover, drain): choose the new node, tear the old nexus down (best effort,
 * bounded: the fence keeps the old nexus from serving, and the nexus garbage collector destroys it
 * once its node answers again), fence it, and publish on the new node. The node is chosen (a
 * requested one checked) while the old target still serves: a refusal (an unknown or offline node,
 * none usable) leaves the volume published where it was instead of without a target. Once the old
 * target is down, a node that fails to build the new one (its io-engine died since it was chosen) is
 * not the end: the next usable node is tried, the old node last, so the volume is never left without
 * a target while any node can host one (HA gives up on a volume that is not published).
 */
async function republish(ctx: CoreContext, volume: VolumeSpec, body: PublishVolumeBody): Promise<VolumeSpec> {
  const { registry } = ctx;
  const old = volume.target!;
  let node = chooseTargetNode(
    registry.nodeViews(),
    onlineReplicaNodes(registry, volume.uuid),
    body.node,
    body.node ? [] : [old.node],
  );
  await teardownTarget(ctx, volume, true, HUNG_ENGINE_WAIT_MS);
  await fenceNexus(ctx, volume.uuid, old.nexus);
  const failed: string[] = [];
  for (;;) {
    try {
      return await publishOn(ctx, registry.volume(volume.uuid), node, { ...body, republish: false });
    } catch (err) {
      failed.push(node);
      // A store failure leaves nothing another node could fix.
      if (toSvcError(err).kind === 'FailedPersist' || registry.volume(volume.uuid).operation) throw err;
      const next = nextTargetNode(registry, volume.uuid, [...failed, old.node]);
      const fallback =
        next ?? (registry.isOnline(old.node) && !failed.includes(old.node) ? old.node : undefined);
      if (!fallback) throw err;
      node = fallback;
    }
  }
}

/** The online nodes holding a replica of the volume: where a target is local to its data. */
function onlineReplicaNodes(registry: Registry, uuid: string): string[] {
  return registry
    .volumeReplicas(uuid)
    .map((r) => registry.replicaNode(r) ?? '')
    .filter((n) => registry.isOnline(n));
}

/** The node a republish tries next, avoiding `avoid`; undefined when none is usable. */
function nextTargetNode(registry: Registry, uuid: string, avoid: string[]): string | undefined {
  try {
    return chooseTargetNode(registry.nodeViews(), onlineReplicaNodes(registry, uuid), undefined, avoid);
  } catch {
    return undefined;
  }
}

/** Unpublish: destroy the nexus (its node must be online unless `force`), keep the target config inactive. */
export async function unpublishVolume(ctx: CoreContext, uuid: string, force: boolean): Promise<VolumeSpec> {
  return ctx.registry.exclusive('volume', uuid, async () => {
    const volume = ctx.registry.volume(uuid);
    checkUsable(volume);
    if (!volume.target || volume.target.active === false)
      throw new SvcError('NotPublished', `volume '${uuid}' is not published`);
    await teardownTarget(ctx, volume, force);
    return ctx.registry.volume(uuid);
  });
}

async function teardownTarget(
  ctx: CoreContext,
  volume: VolumeSpec,
  force: boolean,
  waitMs?: number,
): Promise<void> {
  const { registry, engines } = ctx;
  const target = volume.target!;
  const nexus = registry.nexuses.get(target.nexus);
  const engine = engines.tryGet(target.node);
  if (!engine && !force) {
    throw new SvcError(
      'FailedPrecondition',
      `node '${target.node}' of the volume target is not online; use force to unpublish anyway`,
      `NodeNotOnline: ${target.node}`,
    );
  }
  volume.operation = { operation: 'Unpublish', result: null };
  const nexusDel = nexus
    ? {
        ...nexus,
        spec_status: 'Deleting' as const,
        operation: { operation: 'Destroy' as const, result: null },
      }
    : null;
  await registry.persist({ volumes: [volume], nexuses: nexusDel ? [nexusDel] : [] });
  let destroyed = !nexus;
  if (engine && nexus) {
    try {
      await withDeadline(engine.destroyNexus(nexus.uuid), waitMs, `node '${target.node}' did not answer`);
      destroyed = true;
    } catch (err) {
      if (toSvcError(err).kind === 'NotFound') destroyed = true;
      else if (!force) {
        volume.operation = null;
        await rollbackOp(
          registry,
          { kind: 'volume', id: volume.uuid },
          {
            volumes: [volume],
            nexuses: [{ ...nexus, operation: null }],
          },
        );
        throw err;
      }
    }
    registry.dropNexusState(target.node, nexus.uuid);
  }
  volume.target = { ...target, active: false };
  volume.operation = null;
  await settleOp(registry, { kind: 'volume', id: volume.uuid }, true, {
    volumes: [volume],
    // A nexus that could not be destroyed stays Deleting; the nexus GC ends it when its node is back.
    nexuses: !destroyed && nexusDel ? [{ ...nexusDel, owner: null, operation: null }] : [],
    deleteNexuses: destroyed && nexus ? [nexus.uuid] : [],
    events: [makeEvent('volume', volume.uuid, 'Unpublished', `target on node ${target.node} removed`)],
  });
}
