import { someIds } from '../../../lib/output/humanize.js';
import type { CordonDrainState, NodeSpec, PoolSpec, ReplicaSpec } from '../../../lib/specs/index.js';
import {
  allReplicaSnapshots,
  cloneSpec,
  poolRefName,
  withoutReplicaSnapshots,
} from '../../../lib/specs/index.js';
import { nodeSpec } from '../../../lib/specs/node.js';
import type { CoreContext } from '../context.js';
import { eventKey, makeEvent } from '../events.js';
import { storeWriteFailed } from '../persist.js';
import { notFound, SvcError, toSvcError } from '../svc-error.js';
import { canonicalJson } from './converge.js';

/**
 * Create a pool on a node's io-engine, then record it (pool ops are stored after acting,
 * docs/mayastor-compat.md §1.5).
 */
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
    if (existing) {
      // The same request again (a retry) returns the pool; anything else is a conflict naming why.
      // No disk named: the io-engine's default directory, whichever that resolved to.
      const diff = [
        existing.node !== node && `it is on node '${existing.node}'`,
        disks.some(Boolean) &&
          canonicalJson(existing.disks) !== canonicalJson(disks) &&
          `its disks are ${JSON.stringify(existing.disks)}`,
        canonicalJson(existing.labels ?? null) !== canonicalJson(labels ?? null) &&
          `its labels are ${JSON.stringify(existing.labels ?? null)}`,
      ].filter(Boolean);
      if (diff.length)
        throw new SvcError(
          'AlreadyExists',
          `pool '${id}' already exists with different parameters (${diff.join(', ')}); delete it first or use another id`,
        );
      return existing;
    }
    const state = await engines.get(node).createPool(id, disks[0] ?? '', capacity);
    registry.poolStates.set(id, state);
    // The io-engine has it now: the pool reconciler, which imports the pools a poll did not list,
    // must not wait for the next poll (--cache-period) to know, nor import it should it go meanwhile.
    registry.polledPools.get(node)?.add(id);
    // The directory the io-engine used, also when none was named (its pool dir's default).
    const spec: PoolSpec = {
      node,
      id,
      disks: [state.disk],
      status: { Created: 'Online' },
      labels,
      operation: null,
    };
    await registry.persist({
      pools: [spec],
      events: [makeEvent('pool', id, 'Created', `on node ${node} (${state.disk}, ${state.capacity} bytes)`)],
    });
    return spec;
  });
}

/**
 * Delete a pool: refused while replicas or snapshots live on it (InUse 409). Those being deleted do
 * not count: their destroy waits for the pool (a pool whose disk is gone never comes back), and
 * once the pool is destroyed they are gone with it.
 */
export async function deletePool(ctx: CoreContext, id: string, node?: string): Promise<void> {
  const { registry, engines } = ctx;
  return registry.exclusive('pool', id, async () => {
    const spec = registry.pools.get(id);
    if (!spec || (node && spec.node !== node)) throw notFound('pool', id, 'Pool');
    const onPool = [...registry.replicas.values()].filter((r) => poolRefName(r.pool) === id);
    const users = onPool.filter((r) => r.status !== 'Deleting');
    // Checked here, not left to the io-engine, whose refusal cannot say which snapshots to delete.
    const holding = [...registry.snapshots.values()].filter((s) =>
      allReplicaSnapshots(s).some((r) => r.spec.source_id.pool_id === id),
    );
    const snapshots = holding
      .filter((s) => s.status !== 'Deleting')
      .map((s) => s.spec.uuid)
      .sort();
    if (users.length || snapshots.length) throw poolInUse(id, spec.node, users, snapshots);
    try {
      await engines.get(spec.node).destroyPool(id);
    } catch (err) {
      if (toSvcError(err).kind !== 'NotFound') throw err;
    }
    registry.poolStates.delete(id);
    const left = holding.map((s) => withoutReplicaSnapshots(s, (r) => r.spec.source_id.pool_id === id));
    await registry.persist({
      deletePools: [id],
      deleteReplicas: onPool.map((r) => r.uuid),
      snapshots: left.filter((s) => allReplicaSnapshots(s).length),
      deleteSnapshots: left.filter((s) => !allReplicaSnapshots(s).length).map((s) => s.spec.uuid),
      events: [makeEvent('pool', id, 'Deleted', `from node ${spec.node}`)],
    });
  });
}

/** How often a NodeSpec write is retried when the io-engine registered in between. */
const NODE_CAS_ATTEMPTS = 50;

/**
 * Read-modify-write a NodeSpec by compare-and-swap: io-engines write their own NodeSpec when they
 * register (endpoint), core writes cordon, drain and labels. Each side reads the stored value,
 * edits its own fields and writes only if the key's mod revision is unchanged (and, for core, the
 * lease is still ours), else reads again — so neither loses the other's fields. The value is decoded
 * and encoded by the NodeSpec codec: fields storctl does not know survive byte for byte. `edit`
 * returns false when nothing changes (no write, no event).
 */
async function updateNode(
  ctx: CoreContext,
  id: string,
  edit: (n: NodeSpec) => unknown,
  event: string,
): Promise<NodeSpec> {
  const { registry } = ctx;
  return registry.exclusive('node', id, async () => {
    const key = registry.key('NodeSpec', id);
    for (let attempt = 0; attempt < NODE_CAS_ATTEMPTS; attempt++) {
      const kv = await registry.store.get(key);
      let spec: NodeSpec;
      try {
        const cached = registry.nodes.get(id);
        spec = (kv ? nodeSpec.decode(key, kv.value) : cached && cloneSpec(cached)) as NodeSpec;
      } catch (err) {
        throw new SvcError('Internal', `stored NodeSpec of '${id}' is invalid: ${(err as Error).message}`);
      }
      if (!spec) throw notFound('node', id);
      if (edit(spec) === false) {
        registry.nodes.set(id, cloneSpec(spec));
        return spec;
      }
      // Mayastor leaves empty draining volumes out (serde skip_serializing_if); absent reads as [].
      if (spec.draining_volumes.length === 0) delete (spec as Partial<NodeSpec>).draining_volumes;
      const value = nodeSpec.encode(spec);
      // `event` is "<Action> <message>": each said once in the log.
      const [action, ...words] = event.split(' ');
      const message = words.join(' ');
      const res = await registry.store
        .txn({
          compare: [
            registry.writer.leaseGuard,
            kv
              ? { key, target: 'mod', op: '==', value: kv.modRevision }
              : { key, target: 'create', op: '==', value: 0 },
          ],
          success: [
            { type: 'put', key, value },
            {
              type: 'put',
              key: eventKey(registry.space),
              value: JSON.stringify(makeEvent('node', id, action, message)),
            },
          ],
          failure: [{ type: 'get', key: registry.writer.leaseGuard.key }],
        })
        .catch((err: Error) => {
          throw storeWriteFailed(err);
        });
      if (res.succeeded) {
        registry.nodes.set(id, cloneSpec(spec));
        return spec;
      }
      if (res.responses[0]?.kv?.lease !== registry.writer.leaseGuard.value) {
        await registry.writer.verify().catch(() => {});
        throw new SvcError('FailedPersist', 'core lost its store lease; write refused', 'FailedLock');
      }
      // The io-engine (re)registered meanwhile: read its write and apply the edit again.
      await new Promise((r) => setTimeout(r, Math.min(5 * 2 ** Math.min(attempt, 5), 100) * Math.random()));
    }
    throw new SvcError(
      'Conflict',
      `node '${id}' was updated concurrently ${NODE_CAS_ATTEMPTS} times in a row; retry`,
      `node ${id} busy`,
    );
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
        throw new SvcError(
          'NotFound',
          `node '${id}' has no cordon label '${label}'; its labels: ${[...cordon, ...drain].join(', ') || 'none'}`,
        );
      const c = cordon.filter((l) => l !== label);
      const d = drain.filter((l) => l !== label);
      const cds = n.cordon_drain_state;
      if (d.length === 0) {
        // The drain is cancelled (RemoveAllDrainingVolumes): nothing is moved any more.
        n.cordon_drain_state = c.length ? { Cordoned: { cordonlabels: c } } : undefined;
        n.draining_volumes = [];
      } else if (cds && 'Drained' in cds)
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
      if (drain.includes(label)) return false;
      n.cordon_drain_state = { Draining: { cordonlabels: cordon, drainlabels: [...drain, label] } };
    },
    `Draining with label ${label}`,
  );
  void spec.then(() => ctx.wake()).catch(() => {});
  return spec;
}

const draining = (n: NodeSpec) => {
  const cds = n.cordon_drain_state;
  return Boolean(cds && 'Draining' in cds);
};

/** AddDrainingVolumes: record the volumes whose target is being moved off a Draining node. */
export function addDrainingVolumes(ctx: CoreContext, id: string, volumes: string[]) {
  return updateNode(
    ctx,
    id,
    (n) => {
      const have = new Set(n.draining_volumes ?? []);
      const add = volumes.filter((v) => !have.has(v));
      if (!draining(n) || add.length === 0) return false;
      n.draining_volumes = [...(n.draining_volumes ?? []), ...add];
    },
    `DrainingVolumes ${volumes.join(', ')} being moved off the node`,
  );
}

/** RemoveDrainingVolumes: these volumes' targets left the node (or no longer need to). */
export function removeDrainingVolumes(ctx: CoreContext, id: string, volumes: string[]) {
  return updateNode(
    ctx,
    id,
    (n) => {
      const left = (n.draining_volumes ?? []).filter((v) => !volumes.includes(v));
      if (left.length === (n.draining_volumes ?? []).length) return false;
      n.draining_volumes = left;
    },
    `DrainedVolumes ${volumes.join(', ')} moved off the node`,
  );
}

/** SetDrained: only a Draining node with no volume left to move. */
export function markDrained(ctx: CoreContext, id: string) {
  return updateNode(
    ctx,
    id,
    (n) => {
      const cds = n.cordon_drain_state;
      if (!cds || !('Draining' in cds) || (n.draining_volumes ?? []).length > 0) return false;
      n.cordon_drain_state = { Drained: cds.Draining };
    },
    'Drained every target moved off the node',
  );
}

/**
 * Node labels, with the pool labels' Mayastor semantics (ops/pool-label.ts): a key held with another
 * value and no overwrite, or an unlabel of an absent key, is FailedPrecondition (412); the same
 * label again changes nothing.
 */
export function labelNode(ctx: CoreContext, id: string, key: string, value: string, overwrite: boolean) {
  return updateNode(
    ctx,
    id,
    (n) => {
      const labels = n.labels ?? {};
      if (Object.hasOwn(labels, key) && labels[key] === value) return false;
      if (Object.hasOwn(labels, key) && !overwrite) {
        throw new SvcError(
          'FailedPrecondition',
          `node '${id}' already has label ${key}=${labels[key]}; pass overwrite to replace it`,
          `Label ${key} exists on node ${id} with value ${labels[key]}`,
        );
      }
      n.labels = { ...labels, [key]: value };
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
        throw new SvcError(
          'FailedPrecondition',
          `node '${id}' has no label '${key}'`,
          `Label ${key} not found on node ${id}`,
        );
      delete n.labels[key];
    },
    `Unlabelled ${key}`,
  );
}

/**
 * What keeps a pool from being deleted, and how to empty it: a volume's replica moves off a
 * cordoned node by a scale up and back down (scale-down removes replicas on cordoned nodes first);
 * a replica snapshot stays where it was taken, so its volume snapshot is deleted.
 */
function poolInUse(id: string, node: string, users: ReplicaSpec[], snapshots: string[]): SvcError {
  const volumes = [...new Set(users.flatMap((r) => (r.owners.volume ? [r.owners.volume] : [])))];
  const unowned = users.filter((r) => !r.owners.volume).length;
  const held = [
    volumes.length ? `replicas of ${volumes.length} volume(s) (${someIds(volumes, 3)})` : '',
    unowned ? `${unowned} replica(s) no volume owns` : '',
    snapshots.length
      ? `replica snapshots of ${snapshots.length} volume snapshot(s) (${someIds(snapshots, 3)})`
      : '',
  ].filter(Boolean);
  const steps = [
    volumes.length
      ? `move each volume's replica off it: \`storctl node cordon ${node}\`, then \`storctl volume scale ID <replicas+1>\` and back to <replicas> (a scale-down removes replicas on cordoned nodes first), or delete the volumes`
      : '',
    unowned ? 'delete the unowned replicas with `storctl orphans --delete`' : '',
    snapshots.length
      ? 'delete those snapshots (`storctl snapshot delete ID`): replica snapshots stay in the pool they were taken in'
      : '',
  ].filter(Boolean);
  return new SvcError(
    'InUse',
    `pool '${id}' still holds ${held.join(' and ')}; ${steps.join('; ')}`,
    'PoolNotEmpty',
  );
}
