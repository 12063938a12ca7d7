import {
  childUri,
  cloneSpec,
  type NexusSpec,
  operationName,
  type ReplicaSpec,
  type VolumeSnapshot,
  type VolumeSpec,
} from '../../lib/specs/index.js';
import type { CoreContext } from './context.js';
import { type CoreEvent, makeEvent } from './events.js';
import { retrySettle } from './ops/settle.js';
import { dirty as storeDirty } from './svc-error.js';

/**
 * handle_incomplete_ops (docs/mayastor-compat.md §1.5): a spec with a pending operation is completed or rolled back.
 * - result true (the io-engine action succeeded; only the commit write failed) → the operation's
 *   effect is committed, a Creating spec becomes Created;
 * - result false, or null ("we must have crashed": assume failure) → rolled back: a Creating spec
 *   becomes Deleting (the garbage collectors destroy what was made; an interrupted replica create is
 *   also disowned so it never counts for its volume), otherwise the operation is cleared.
 * A Destroy stays Deleting either way: the garbage collectors finish it.
 * These are pure: the decision table, testable without a store.
 */
export function settleVolume(v: VolumeSpec): { fixed: VolumeSpec; committed: boolean } {
  const fixed = cloneSpec(v);
  const op = fixed.operation!;
  const committed = op.result === true;
  fixed.operation = null;
  if (!committed) {
    if (fixed.status === 'Creating') fixed.status = 'Deleting';
    return { fixed, committed };
  }
  const o = op.operation;
  if (o === 'Create') {
    if (fixed.status === 'Creating') fixed.status = { Created: 'Online' };
  } else if (o === 'Unpublish') {
    if (fixed.target) fixed.target = { ...fixed.target, active: false };
  } else if (o === 'Unshare') {
    if (fixed.target) fixed.target = { ...fixed.target, protocol: null };
  } else if (typeof o === 'object') {
    if ('SetReplica' in o) fixed.num_replicas = o.SetReplica;
    else if ('Resize' in o) fixed.size = o.Resize;
    else if ('Share' in o && fixed.target) fixed.target = { ...fixed.target, protocol: o.Share };
    else if ('Publish2' in o) {
      fixed.target = o.Publish2.config;
      fixed.last_nexus_id = o.Publish2.config.nexus;
      fixed.publish_context = o.Publish2.publish_context;
    } else if ('Republish' in o) {
      fixed.target = o.Republish.config;
      fixed.last_nexus_id = o.Republish.config.nexus;
    }
  }
  return { fixed, committed };
}

export function settleReplica(r: ReplicaSpec): ReplicaSpec {
  const fixed = cloneSpec(r);
  const op = fixed.operation!;
  fixed.operation = null;
  if (fixed.status !== 'Creating') {
    if (op.result === true && typeof op.operation === 'object' && 'Resize' in op.operation)
      fixed.size = op.operation.Resize;
    return fixed;
  }
  if (op.result === true) fixed.status = { Created: 'online' };
  else {
    fixed.status = 'Deleting';
    fixed.owners = { volume: null, disown_all: true };
  }
  return fixed;
}

export function settleNexus(n: NexusSpec): NexusSpec {
  const fixed = cloneSpec(n);
  const op = fixed.operation!;
  fixed.operation = null;
  if (op.operation === 'Destroy') fixed.spec_status = 'Deleting';
  else if (fixed.spec_status === 'Creating')
    fixed.spec_status = op.result === true ? { Created: 'Online' } : 'Deleting';
  else if (op.result === true && op.operation === 'Shutdown') fixed.spec_status = { Created: 'Shutdown' };
  else if (op.result === true) {
    const o = op.operation;
    if (o === 'Unshare') fixed.share = 'none';
    else if (typeof o === 'object' && 'Share' in o) fixed.share = o.Share[0];
    else if (typeof o === 'object' && 'AddChild' in o) fixed.children = [...fixed.children, o.AddChild];
    else if (typeof o === 'object' && 'RemoveChild' in o) {
      const gone = childUri(o.RemoveChild);
      fixed.children = fixed.children.filter((c) => childUri(c) !== gone);
    }
  }
  return fixed;
}

/**
 * LeaveAsIs: a Creating snapshot whose create is not known to have succeeded stays Creating, and
 * the replica snapshots that create logged join its transactions (any may exist on its io-engine),
 * for a delete or the snapshot GC to destroy.
 */
export function settleSnapshot(s: VolumeSnapshot): VolumeSnapshot {
  const fixed = cloneSpec(s);
  const op = fixed.metadata.operation!;
  fixed.metadata.operation = null;
  if (op.result !== true && typeof op.operation === 'object' && 'Create' in op.operation) {
    const { txn_id, replicas } = op.operation.Create;
    const known = fixed.metadata.transactions[txn_id] ?? [];
    const unknown = replicas.filter((p) => !known.some((r) => r.spec.uuid === p.spec.uuid));
    if (unknown.length) fixed.metadata.transactions[txn_id] = [...known, ...unknown];
  }
  if (op.result === true) {
    if (op.operation === 'Destroy') fixed.status = 'Deleting';
    else if (fixed.status === 'Creating') fixed.status = { Created: null };
  }
  return fixed;
}

function fixVolume(v: VolumeSpec): { fixed: VolumeSpec; event: CoreEvent } {
  const { fixed, committed } = settleVolume(v);
  return { fixed, event: recoveredEvent(v, committed) };
}

function recoveredEvent(v: VolumeSpec, committed: boolean): CoreEvent {
  const what = v.operation ? operationName(v.operation.operation) : 'operation';
  return makeEvent(
    'volume',
    v.uuid,
    'Recovered',
    `pending ${what} ${committed ? 'committed' : 'rolled back'}`,
  );
}

const fixReplica = settleReplica;
const fixNexus = settleNexus;
const fixSnapshot = settleSnapshot;

/** At start, before REST serves: every pending operation is a crash leftover; batched writes. */
export async function recoverAtStartup(ctx: CoreContext): Promise<number> {
  const { registry, log } = ctx;
  const vols = [...registry.volumes.values()].filter((v) => v.operation).map(fixVolume);
  const replicas = [...registry.replicas.values()].filter((r) => r.operation).map(fixReplica);
  const nexuses = [...registry.nexuses.values()].filter((n) => n.operation).map(fixNexus);
  const snapshots = [...registry.snapshots.values()].filter((s) => s.metadata.operation).map(fixSnapshot);
  // Chunked: etcd refuses transactions of more than 128 operations (--max-txn-ops).
  const CHUNK = 50;
  for (let i = 0; i < vols.length; i += CHUNK) {
    const part = vols.slice(i, i + CHUNK);
    await registry.persist({ volumes: part.map((p) => p.fixed), events: part.map((p) => p.event) });
  }
  for (let i = 0; i < replicas.length; i += 2 * CHUNK)
    await registry.persist({ replicas: replicas.slice(i, i + 2 * CHUNK) });
  for (let i = 0; i < nexuses.length; i += 2 * CHUNK)
    await registry.persist({ nexuses: nexuses.slice(i, i + 2 * CHUNK) });
  for (let i = 0; i < snapshots.length; i += 2 * CHUNK)
    await registry.persist({ snapshots: snapshots.slice(i, i + 2 * CHUNK) });
  const total = vols.length + replicas.length + nexuses.length + snapshots.length;
  if (total)
    log.info(
      {
        volumes: vols.length,
        replicas: replicas.length,
        nexuses: nexuses.length,
        snapshots: snapshots.length,
      },
      'pending operations recovered',
    );
  return total;
}

/**
 * The persistent-store reconciler, while requests are served: only specs left dirty by a failed
 * commit write. Each is re-read and fixed under the lock its own operations take, so an operation
 * in flight (whose specs carry their operation legitimately) is never touched.
 */
export async function reconcileDirtySpecs(ctx: CoreContext): Promise<number> {
  const { registry } = ctx;
  let fixedCount = 0;
  // The lock the spec's own operations take: its volume's while that volume exists, else its own
  // (replica-admin, nexus-admin: `storctl orphans --delete`). With the volume's lock an orphan's
  // delete in flight was "fixed", and that write, landing after the delete, brought the spec back.
  const ownerOf = (type: 'volume' | 'replica' | 'nexus', id: string): string | null => {
    if (type === 'volume') return id;
    const owner =
      type === 'replica' ? registry.replicas.get(id)?.owners.volume : registry.nexuses.get(id)?.owner;
    return owner && registry.volumes.has(owner) ? owner : null;
  };
  const dirty: ['volume' | 'replica' | 'nexus', string][] = [
    ...[...registry.volumes.values()]
      .filter((v) => v.operation)
      .map((v) => ['volume', v.uuid] as ['volume', string]),
    ...[...registry.replicas.values()]
      .filter((r) => r.operation)
      .map((r) => ['replica', r.uuid] as ['replica', string]),
    ...[...registry.nexuses.values()]
      .filter((n) => n.operation)
      .map((n) => ['nexus', n.uuid] as ['nexus', string]),
  ];
  for (const [type, id] of dirty) {
    const owner = ownerOf(type, id);
    const lockType = owner ? 'volume' : type;
    const lockId = owner ?? id;
    if (registry.isBusy(lockType, lockId)) continue;
    await registry
      .exclusive(
        lockType,
        lockId,
        async () => {
          if (type === 'volume') {
            const v = registry.volumes.get(id);
            if (!v?.operation) return;
            // The commit (result true) or rollback (false) this core failed to write: written now.
            const event = recoveredEvent(v, v.operation.result === true);
            if (await retrySettle(registry, { kind: 'volume', id }, [event])) {
              fixedCount++;
              return;
            }
            const { fixed } = settleVolume(v);
            await registry.persist({ volumes: [fixed], events: [event] });
          } else if (type === 'replica') {
            const r = registry.replicas.get(id);
            if (!r?.operation) return;
            if (owner && registry.volumes.get(owner)?.operation) return; // settled with its volume
            if (await retrySettle(registry, { kind: 'replica', id }, [])) return void fixedCount++;
            await registry.persist({ replicas: [fixReplica(r)] });
          } else {
            const n = registry.nexuses.get(id);
            if (!n?.operation) return;
            if (owner && registry.volumes.get(owner)?.operation) return; // settled with its volume
            if (await retrySettle(registry, { kind: 'nexus', id }, [])) return void fixedCount++;
            await registry.persist({ nexuses: [fixNexus(n)] });
          }
          fixedCount++;
        },
        // A request meanwhile meets the pending operation, not a mere busy lock: 507 StoreDirty.
        () => storeDirty(lockType, lockId),
      )
      .catch(() => {});
  }
  for (const s of [...registry.snapshots.values()]) {
    if (
      !s.metadata.operation ||
      registry.isBusy('volume', s.spec.source_id) ||
      registry.isBusy('snapshot', s.spec.uuid)
    )
      continue;
    const id = s.spec.uuid;
    const done = await retrySettle(registry, { kind: 'snapshot', id }, [])
      .then((retried) => retried || registry.persist({ snapshots: [fixSnapshot(s)] }).then(() => true))
      .catch(() => false);
    if (done) fixedCount++;
  }
  return fixedCount;
}
