import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import type { CordonDrainState, NodeSpec, PoolSpec } from '../model.js';
import { poolName } from '../model.js';
import { SvcError, toSvcError } from '../svc-error.js';

/** Create a pool on a node's io-engine, then record it (pool ops are stored after acting, §1.5). */
export async function createPool(
  ctx: CoreContext,
  node: string,
  id: string,
  disks: string[],
  labels: Record<string, string> | null,
  capacity?: number,
): Promise<PoolSpec> {
  const { registry, engines } = ctx;
  return registry.exclusive('pool', id, async () => {
    const existing = registry.pools.get(id);
    if (existing)
      throw new SvcError('AlreadyExists', `pool '${id}' already exists on node '${existing.node}'`);
    const state = await engines.get(node).createPool(id, disks[0], capacity);
    registry.poolStates.set(id, state);
    const spec: PoolSpec = { node, id, disks, status: { Created: 'Online' }, labels, operation: null };
    await registry.persist({
      pools: [spec],
      events: [makeEvent('pool', id, 'Created', `on node ${node} (${disks[0]}, ${state.capacity} bytes)`)],
    });
    return spec;
  });
}

/** Delete a pool: refused while replicas live on it (InUse 409). */
export async function deletePool(ctx: CoreContext, id: string, node?: string): Promise<void> {
  const { registry, engines } = ctx;
  return registry.exclusive('pool', id, async () => {
    const spec = registry.pools.get(id);
    if (!spec || (node && spec.node !== node))
      throw new SvcError('NotFound', `pool '${id}' not found`, `The Pool '${id}' was not found`);
    const users = [...registry.replicas.values()].filter((r) => poolName(r.pool) === id);
    if (users.length)
      throw new SvcError(
        'InUse',
        `pool '${id}' still holds ${users.length} replica(s); delete or move their volumes first`,
      );
    try {
      await engines.get(spec.node).destroyPool(id);
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') throw err;
    }
    registry.poolStates.delete(id);
    await registry.persist({
      deletePools: [id],
      events: [makeEvent('pool', id, 'Deleted', `from node ${spec.node}`)],
    });
  });
}

/** Read-modify-write a NodeSpec from the store (io-engines register it too), lease-guarded. */
async function updateNode(
  ctx: CoreContext,
  id: string,
  edit: (n: NodeSpec) => void,
  event: string,
): Promise<NodeSpec> {
  const { registry } = ctx;
  return registry.exclusive('node', id, async () => {
    const kv = await registry.store.get(registry.key('NodeSpec', id));
    const spec: NodeSpec | undefined = kv ? JSON.parse(kv.value) : registry.nodes.get(id);
    if (!spec) throw new SvcError('NotFound', `node '${id}' not found`, `The node '${id}' was not found`);
    edit(spec);
    await registry.persist({ nodes: [spec], events: [makeEvent('node', id, event.split(' ')[0], event)] });
    return spec;
  });
}

const labelsOf = (s: CordonDrainState | null | undefined) =>
  !s
    ? { cordon: [] as string[], drain: [] as string[] }
    : 'Cordoned' in s
      ? { cordon: s.Cordoned.cordonlabels, drain: [] }
      : 'Draining' in s
        ? { cordon: s.Draining.cordonlabels, drain: s.Draining.drainlabels }
        : { cordon: s.Drained.cordonlabels, drain: s.Drained.drainlabels };

export function cordonNode(ctx: CoreContext, id: string, label: string) {
  return updateNode(
    ctx,
    id,
    (n) => {
      const { cordon, drain } = labelsOf(n.cordon_drain_state);
      if (cordon.includes(label) || drain.includes(label))
        throw new SvcError('AlreadyExists', `node '${id}' is already cordoned with label '${label}'`);
      const cds = n.cordon_drain_state;
      if (cds && 'Draining' in cds) cds.Draining.cordonlabels.push(label);
      else if (cds && 'Drained' in cds) cds.Drained.cordonlabels.push(label);
      else n.cordon_drain_state = { Cordoned: { cordonlabels: [...cordon, label] } };
    },
    `Cordoned with label ${label}`,
  );
}

/** Uncordon: drop the label; a drain label cancels the drain; empty lists clear the state. */
export function uncordonNode(ctx: CoreContext, id: string, label: string) {
  return updateNode(
    ctx,
    id,
    (n) => {
      const { cordon, drain } = labelsOf(n.cordon_drain_state);
      if (!cordon.includes(label) && !drain.includes(label))
        throw new SvcError('NotFound', `node '${id}' has no cordon label '${label}'`);
      const c = cordon.filter((l) => l !== label);
      const d = drain.filter((l) => l !== label);
      const cds = n.cordon_drain_state;
      if (d.length === 0) n.cordon_drain_state = c.length ? { Cordoned: { cordonlabels: c } } : null;
      else if (cds && 'Drained' in cds)
        n.cordon_drain_state = { Drained: { cordonlabels: c, drainlabels: d } };
      else n.cordon_drain_state = { Draining: { cordonlabels: c, drainlabels: d } };
      if (!n.cordon_drain_state) delete n.cordon_drain_state;
    },
    `Uncordoned label ${label}`,
  );
}

export function drainNode(ctx: CoreContext, id: string, label: string) {
  const spec = updateNode(
    ctx,
    id,
    (n) => {
      const { cordon, drain } = labelsOf(n.cordon_drain_state);
      if (drain.includes(label)) return;
      n.cordon_drain_state = { Draining: { cordonlabels: cordon, drainlabels: [...drain, label] } };
    },
    `Draining with label ${label}`,
  );
  void spec.then(() => ctx.wake()).catch(() => {});
  return spec;
}

export function markDrained(ctx: CoreContext, id: string) {
  return updateNode(
    ctx,
    id,
    (n) => {
      const cds = n.cordon_drain_state;
      if (cds && 'Draining' in cds) n.cordon_drain_state = { Drained: cds.Draining };
    },
    'Drained',
  );
}

export function labelNode(ctx: CoreContext, id: string, key: string, value: string, overwrite: boolean) {
  return updateNode(
    ctx,
    id,
    (n) => {
      n.labels ??= {};
      if (Object.hasOwn(n.labels, key) && n.labels[key] !== value && !overwrite) {
        throw new SvcError(
          'AlreadyExists',
          `node '${id}' already has label ${key}=${n.labels[key]}; pass overwrite to replace it`,
        );
      }
      n.labels[key] = value;
    },
    `Labelled ${key}=${value}`,
  );
}

export function unlabelNode(ctx: CoreContext, id: string, key: string) {
  return updateNode(
    ctx,
    id,
    (n) => {
      if (!n.labels || !Object.hasOwn(n.labels, key))
        throw new SvcError('NotFound', `node '${id}' has no label '${key}'`);
      delete n.labels[key];
    },
    `Unlabelled ${key}`,
  );
}
