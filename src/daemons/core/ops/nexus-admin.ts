import { isLocalUri, replicaUuidOfUri } from '../../../lib/child-uri.js';
import {
  childUri,
  cloneSpec,
  isCreated,
  type NexusChild,
  type NexusOperation,
  type NexusSpec,
} from '../../../lib/specs/index.js';
import { nexusInfoKey } from '../../../lib/store/keys.js';
import type { CoreContext } from '../context.js';
import type { ChildState } from '../engine-api.js';
import { makeEvent } from '../events.js';
import { dirty, SvcError, toSvcError } from '../svc-error.js';
import { rollbackOp, settleOp } from './settle.js';

/**
 * Nexuses made and changed by an operator through REST (`/nodes/{node}/nexuses/{id}`,
 * `/nexuses/{id}/children/{uri}`, `.../share/{protocol}`), as Mayastor's nexus endpoints do: the spec
 * is unmanaged with no owner, each step logged before the io-engine acts (docs/mayastor-compat.md §1.5).
 *
 * A nexus owned by a volume (its target, or one left for the nexus GC) is refused with InUse (409),
 * as Mayastor refuses to destroy an owned resource without disowning it (`start_destroy_by`): the
 * volume's publish / unpublish / scale and the reconcilers are what change it.
 */

const logged = (operation: NexusOperation) => ({ operation, result: null });

/** The nexus spec `uuid` (on `node` when given), NotFound otherwise. */
export function nexusAt(ctx: CoreContext, uuid: string, node?: string): NexusSpec {
  const n = ctx.registry.nexuses.get(uuid);
  if (!n || (node && n.node !== node))
    throw new SvcError(
      'NotFound',
      `nexus '${uuid}' not found${node ? ` on node '${node}'` : ''}`,
      `The Nexus '${uuid}' was not found`,
    );
  return n;
}

function notOwned(n: NexusSpec, what: string): void {
  if (n.owner)
    throw new SvcError(
      'InUse',
      `nexus '${n.uuid}' belongs to volume '${n.owner}'; ${what} through the volume (storctl volume unpublish / scale) instead`,
      `Nexus ${n.uuid} is in use by volume ${n.owner}`,
    );
}

function usable(n: NexusSpec): void {
  if (n.operation) throw dirty('nexus', n.uuid);
  if (!isCreated(n.spec_status))
    throw new SvcError(
      'FailedPrecondition',
      `nexus '${n.uuid}' is ${n.spec_status === 'Creating' ? 'still being created' : 'being deleted'}`,
      n.spec_status === 'Creating' ? 'PendingCreation' : 'PendingDeletion',
    );
}

/**
 * A remote child must be served by one of the cluster's io-engines: the io-engine connects to the
 * URI on the caller's behalf, so any other host would let a request open connections anywhere.
 */
function requireClusterTarget(ctx: CoreContext, uri: string): void {
  if (isLocalUri(uri)) return;
  const host = new URL(uri).host;
  const known = [...ctx.registry.nodeLive.values()].flatMap((l) => (l.nbdEndpoint ? [l.nbdEndpoint] : []));
  if (!known.includes(host))
    throw new SvcError(
      'InvalidArgument',
      `child URI '${uri.slice(0, 96)}' is not served by an io-engine of this cluster (NBD endpoints: ${known.join(', ') || 'none online'})`,
    );
}

/** A child URI as stored: a known replica's URI becomes a Replica child, anything else a Uri child. */
function childSpec(ctx: CoreContext, uri: string): NexusChild {
  const c: NexusChild = { Uri: uri };
  const uuid = replicaUuidOfUri(uri);
  return uuid && ctx.registry.replicas.has(uuid) ? { Replica: { uuid, share_uri: uri } } : c;
}

export async function createNexus(
  ctx: CoreContext,
  node: string,
  uuid: string,
  children: string[],
  size: number,
): Promise<NexusSpec> {
  const { registry, engines } = ctx;
  for (const c of children) requireClusterTarget(ctx, c);
  return registry.exclusive('nexus', uuid, async () => {
    const existing = registry.nexuses.get(uuid);
    if (existing) {
      if (existing.operation) throw dirty('nexus', uuid);
      throw isCreated(existing.spec_status)
        ? new SvcError('AlreadyExists', `nexus '${uuid}' already exists on node '${existing.node}'`)
        : new SvcError('Deleting', `nexus '${uuid}' is being deleted; retry once it is gone`);
    }
    const engine = engines.get(node);
    const spec: NexusSpec = {
      uuid,
      name: uuid,
      node,
      children: children.map((c) => childSpec(ctx, c)),
      size,
      spec_status: 'Creating',
      share: 'none',
      managed: false,
      owner: null,
      operation: logged('Create'),
      nvmf_config: null,
      status_info: { shutdown_failed: false },
      allowed_hosts: [],
    };
    await registry.persist({ nexuses: [spec] });
    try {
      const state = await engine.createNexus({
        uuid,
        size,
        children,
        nexusInfoKey: nexusInfoKey(registry.space, uuid, null),
      });
      registry.setNexusState(node, state);
    } catch (err) {
      // Nothing was made (the io-engine cleans up a failed create); the spec goes again.
      await rollbackOp(registry, { kind: 'nexus', id: uuid }, { deleteNexuses: [uuid] });
      throw err;
    }
    spec.spec_status = { Created: 'Online' };
    spec.operation = null;
    await settleOp(registry, { kind: 'nexus', id: uuid }, true, {
      nexuses: [spec],
      events: [
        makeEvent('nexus', uuid, 'Created', `on node ${node} with ${children.length} child(ren), unmanaged`),
      ],
    });
    return spec;
  });
}

export async function destroyNexus(ctx: CoreContext, uuid: string, node?: string): Promise<void> {
  const { registry, engines } = ctx;
  return registry.exclusive('nexus', uuid, async () => {
    const n = cloneSpec(nexusAt(ctx, uuid, node));
    // A nexus whose owning volume is gone is an orphan (the nexus GC's, or `storctl orphans --delete`).
    if (!n.owner || registry.volumes.has(n.owner)) notOwned(n, 'remove it');
    if (n.operation) throw dirty('nexus', uuid);
    const engine = engines.get(n.node);
    await registry.persist({ nexuses: [{ ...n, spec_status: 'Deleting', operation: logged('Destroy') }] });
    try {
      await engine.destroyNexus(uuid);
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') {
        await rollbackOp(registry, { kind: 'nexus', id: uuid }, { nexuses: [{ ...n, operation: null }] });
        throw err;
      }
    }
    registry.dropNexusState(n.node, uuid);
    await settleOp(registry, { kind: 'nexus', id: uuid }, true, {
      deleteNexuses: [uuid],
      events: [makeEvent('nexus', uuid, 'Deleted', `from node ${n.node}`)],
    });
  });
}

/** Children as the io-engine reports them (fresh), falling back to the spec's. */
export async function nexusChildren(ctx: CoreContext, n: NexusSpec): Promise<ChildState[]> {
  const engine = ctx.engines.tryGet(n.node);
  if (engine) {
    try {
      const st = await engine.getNexus(n.uuid);
      ctx.registry.setNexusState(n.node, st);
      return st.children;
    } catch {
      // fall through to the cached state
    }
  }
  const st = ctx.registry.nexusStates.get(n.node)?.get(n.uuid);
  return (
    st?.children ?? n.children.map((c) => ({ uri: childUri(c), state: 'Unknown', rebuildProgress: null }))
  );
}

/** Same child: the same URI, or the same replica uuid (`?uuid=`). */
export function sameChild(a: string, b: string): boolean {
  if (a === b) return true;
  const ua = replicaUuidOfUri(a);
  return ua !== null && ua === replicaUuidOfUri(b);
}

export async function addNexusChild(
  ctx: CoreContext,
  uuid: string,
  uri: string,
  node?: string,
): Promise<ChildState> {
  const { registry, engines } = ctx;
  return registry.exclusive('nexus', uuid, async () => {
    const n = cloneSpec(nexusAt(ctx, uuid, node));
    notOwned(n, 'change its children');
    usable(n);
    if (n.children.some((c) => sameChild(childUri(c), uri)))
      throw new SvcError('AlreadyExists', `nexus '${uuid}' already has child '${uri}'`);
    const engine = engines.get(n.node);
    requireClusterTarget(ctx, uri);
    const child = childSpec(ctx, uri);
    await registry.persist({ nexuses: [{ ...n, operation: logged({ AddChild: child }) }] });
    let state: Awaited<ReturnType<typeof engine.addChild>>;
    try {
      state = await engine.addChild(uuid, uri);
    } catch (err) {
      await rollbackOp(registry, { kind: 'nexus', id: uuid }, { nexuses: [{ ...n, operation: null }] });
      throw err;
    }
    registry.setNexusState(n.node, state);
    await settleOp(registry, { kind: 'nexus', id: uuid }, true, {
      nexuses: [{ ...n, children: [...n.children, child], operation: null }],
      events: [makeEvent('nexus', uuid, 'ChildAdded', uri)],
    });
    return (
      state.children.find((c) => sameChild(c.uri, uri)) ?? { uri, state: 'Degraded', rebuildProgress: 0 }
    );
  });
}

export async function removeNexusChild(
  ctx: CoreContext,
  uuid: string,
  uri: string,
  node?: string,
): Promise<void> {
  const { registry, engines } = ctx;
  return registry.exclusive('nexus', uuid, async () => {
    const n = cloneSpec(nexusAt(ctx, uuid, node));
    notOwned(n, 'change its children');
    usable(n);
    const child = n.children.find((c) => sameChild(childUri(c), uri));
    if (!child) throw new SvcError('NotFound', `nexus '${uuid}' has no child '${uri}'`);
    const engine = engines.get(n.node);
    await registry.persist({ nexuses: [{ ...n, operation: logged({ RemoveChild: child }) }] });
    try {
      await engine.removeChild(uuid, childUri(child));
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') {
        await rollbackOp(registry, { kind: 'nexus', id: uuid }, { nexuses: [{ ...n, operation: null }] });
        throw err;
      }
    }
    await engine.getNexus(uuid).then(
      (st) => registry.setNexusState(n.node, st),
      () => {},
    );
    await settleOp(registry, { kind: 'nexus', id: uuid }, true, {
      nexuses: [{ ...n, children: n.children.filter((c) => c !== child), operation: null }],
      events: [makeEvent('nexus', uuid, 'ChildRemoved', childUri(child))],
    });
  });
}

/** Share over NBD (the only protocol storctl io-engines serve); returns the target URI. */
export async function shareNexus(ctx: CoreContext, uuid: string, node: string | undefined): Promise<string> {
  const { registry, engines } = ctx;
  return registry.exclusive('nexus', uuid, async () => {
    const n = cloneSpec(nexusAt(ctx, uuid, node));
    notOwned(n, 'publish it');
    usable(n);
    if (n.share !== 'none')
      throw new SvcError('AlreadyShared', `nexus '${uuid}' is already shared over ${n.share}`);
    const engine = engines.get(n.node);
    await registry.persist({ nexuses: [{ ...n, operation: logged({ Share: ['nbd', []] }) }] });
    let uri: string;
    try {
      uri = await engine.publishNexus(uuid, 'nbd');
    } catch (err) {
      await rollbackOp(registry, { kind: 'nexus', id: uuid }, { nexuses: [{ ...n, operation: null }] });
      throw err;
    }
    const st = registry.nexusStates.get(n.node)?.get(uuid);
    if (st) registry.setNexusState(n.node, { ...st, deviceUri: uri, protocol: 'nbd' });
    await settleOp(registry, { kind: 'nexus', id: uuid }, true, {
      nexuses: [{ ...n, share: 'nbd', operation: null }],
      events: [makeEvent('nexus', uuid, 'Shared', `over nbd as ${uri}`)],
    });
    return uri;
  });
}

export async function unshareNexus(ctx: CoreContext, uuid: string, node: string | undefined): Promise<void> {
  const { registry, engines } = ctx;
  return registry.exclusive('nexus', uuid, async () => {
    const n = cloneSpec(nexusAt(ctx, uuid, node));
    notOwned(n, 'unpublish it');
    usable(n);
    if (n.share === 'none') throw new SvcError('NotShared', `nexus '${uuid}' is not shared`);
    const engine = engines.get(n.node);
    await registry.persist({ nexuses: [{ ...n, operation: logged('Unshare') }] });
    try {
      await engine.unpublishNexus(uuid);
    } catch (err) {
      await rollbackOp(registry, { kind: 'nexus', id: uuid }, { nexuses: [{ ...n, operation: null }] });
      throw err;
    }
    const st = registry.nexusStates.get(n.node)?.get(uuid);
    if (st) registry.setNexusState(n.node, { ...st, deviceUri: '', protocol: 'none' });
    await settleOp(registry, { kind: 'nexus', id: uuid }, true, {
      nexuses: [{ ...n, share: 'none', operation: null }],
      events: [makeEvent('nexus', uuid, 'Unshared', 'NBD export removed')],
    });
  });
}
