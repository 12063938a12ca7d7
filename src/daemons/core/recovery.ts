import type { CoreContext } from './context.js';
import { type CoreEvent, makeEvent } from './events.js';
import type { NexusSpec, ReplicaSpec, VolumeSnapshot, VolumeSpec } from './model.js';
import { dirty as storeDirty } from './svc-error.js';

/**
 * handle_incomplete_ops (reference §1.5): a spec with a pending operation is finished or rolled back.
 * - status Creating → Deleting (the garbage collectors destroy what was made; an interrupted
 *   replica create is also disowned so it never counts for its volume);
 * - result true → the effect is committed; false or null ("we must have crashed") → cleared.
 * storctl commits effects and clears the operation in one transaction, so result:true only shows
 * up in memory after a failed commit write; it is committed here.
 */
function fixVolume(v: VolumeSpec): { fixed: VolumeSpec; event: CoreEvent } {
  const fixed = structuredClone(v);
  const op = fixed.operation!;
  if (fixed.status === 'Creating') fixed.status = 'Deleting';
  else if (op.result === true && typeof op.operation === 'object' && 'SetReplica' in op.operation) {
    fixed.num_replicas = op.operation.SetReplica;
  }
  fixed.operation = null;
  const what = JSON.stringify(op.operation).slice(0, 60);
  return {
    fixed,
    event: makeEvent(
      'volume',
      v.uuid,
      'Recovered',
      `pending ${what} ${op.result === true ? 'committed' : 'rolled back'}`,
    ),
  };
}

function fixReplica(r: ReplicaSpec): ReplicaSpec {
  const fixed = structuredClone(r);
  if (fixed.status === 'Creating') {
    fixed.status = 'Deleting';
    fixed.owners = { volume: null, disown_all: true };
  }
  fixed.operation = null;
  return fixed;
}

function fixNexus(n: NexusSpec): NexusSpec {
  const fixed = structuredClone(n);
  if (fixed.spec_status === 'Creating' || fixed.operation?.operation === 'Destroy')
    fixed.spec_status = 'Deleting';
  fixed.operation = null;
  return fixed;
}

function fixSnapshot(s: VolumeSnapshot): VolumeSnapshot {
  // LeaveAsIs: a Creating snapshot stays Creating (a retry with the same id completes it).
  const fixed = structuredClone(s);
  fixed.metadata.operation = null;
  return fixed;
}

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
 * commit write. Each is re-read and fixed under its volume's lock, so an operation in flight (whose
 * specs carry their operation legitimately) is never touched.
 */
export async function reconcileDirtySpecs(ctx: CoreContext): Promise<number> {
  const { registry } = ctx;
  let fixedCount = 0;
  const ownerOf = (type: 'volume' | 'replica' | 'nexus', id: string): string | null =>
    type === 'volume'
      ? id
      : type === 'replica'
        ? (registry.replicas.get(id)?.owners.volume ?? null)
        : (registry.nexuses.get(id)?.owner ?? null);
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
            const { fixed, event } = fixVolume(v);
            await registry.persist({ volumes: [fixed], events: [event] });
          } else if (type === 'replica') {
            const r = registry.replicas.get(id);
            if (!r?.operation) return;
            await registry.persist({ replicas: [fixReplica(r)] });
          } else {
            const n = registry.nexuses.get(id);
            if (!n?.operation) return;
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
    await registry.persist({ snapshots: [fixSnapshot(s)] }).catch(() => {});
    fixedCount++;
  }
  return fixedCount;
}
