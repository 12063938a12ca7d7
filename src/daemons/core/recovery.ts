import type { CoreContext } from './context.js';
import { makeEvent } from './events.js';
import type { NexusSpec, ReplicaSpec, VolumeSnapshot, VolumeSpec } from './model.js';

/**
 * handle_incomplete_ops (reference §1.5), run at start before serving and by the persistent-store
 * reconciler: a spec with a pending operation is finished or rolled back.
 * - status Creating → Deleting (the garbage collectors destroy what was made);
 * - result true → the effect is committed; false or null ("we must have crashed") → cleared.
 * storctl commits effects and clears the operation in one transaction, so result:true only shows
 * up in memory after a failed commit write; it is committed here.
 * Returns how many specs were repaired.
 */
export async function handleIncompleteOps(ctx: CoreContext): Promise<number> {
  const { registry, log } = ctx;
  const volumes: VolumeSpec[] = [];
  const replicas: ReplicaSpec[] = [];
  const nexuses: NexusSpec[] = [];
  const snapshots: VolumeSnapshot[] = [];
  const events = [];

  for (const v of registry.volumes.values()) {
    if (!v.operation || registry.isBusy('volume', v.uuid)) continue;
    const fixed = structuredClone(v);
    const op = fixed.operation!;
    if (fixed.status === 'Creating') fixed.status = 'Deleting';
    else if (op.result === true && typeof op.operation === 'object' && 'SetReplica' in op.operation)
      fixed.num_replicas = op.operation.SetReplica;
    fixed.operation = null;
    volumes.push(fixed);
    events.push(
      makeEvent(
        'volume',
        v.uuid,
        'Recovered',
        `pending ${JSON.stringify(op.operation).slice(0, 60)} ${op.result === true ? 'committed' : 'rolled back'}`,
      ),
    );
  }
  for (const r of registry.replicas.values()) {
    if (!r.operation) continue;
    const fixed = structuredClone(r);
    if (fixed.status === 'Creating') fixed.status = 'Deleting';
    fixed.operation = null;
    replicas.push(fixed);
  }
  for (const n of registry.nexuses.values()) {
    if (!n.operation) continue;
    const fixed = structuredClone(n);
    if (fixed.spec_status === 'Creating') fixed.spec_status = 'Deleting';
    if (typeof fixed.operation!.operation === 'string' && fixed.operation!.operation === 'Destroy')
      fixed.spec_status = 'Deleting';
    fixed.operation = null;
    nexuses.push(fixed);
  }
  for (const s of registry.snapshots.values()) {
    if (!s.metadata.operation) continue;
    const fixed = structuredClone(s);
    // LeaveAsIs: a Creating snapshot stays Creating (a retry with the same id completes it).
    fixed.metadata.operation = null;
    snapshots.push(fixed);
  }
  const total = volumes.length + replicas.length + nexuses.length + snapshots.length;
  if (total === 0) return 0;
  // Chunked so 10k dirty specs do not become one giant transaction.
  const CHUNK = 128;
  for (
    let i = 0;
    i < Math.max(volumes.length, replicas.length, nexuses.length, snapshots.length);
    i += CHUNK
  ) {
    await registry.persist({
      volumes: volumes.slice(i, i + CHUNK),
      replicas: replicas.slice(i, i + CHUNK),
      nexuses: nexuses.slice(i, i + CHUNK),
      snapshots: snapshots.slice(i, i + CHUNK),
      events: events.slice(i, i + CHUNK),
    });
  }
  log.info(
    {
      volumes: volumes.length,
      replicas: replicas.length,
      nexuses: nexuses.length,
      snapshots: snapshots.length,
    },
    'pending operations recovered',
  );
  return total;
}
