import { hasRecord } from '../catalog/cluster.js';
import { formatDuration } from '../cli-args.js';
import { isSwitchOverDone, switchOverError, switchOverStageName } from '../specs/index.js';
import type { StoreSnapshot } from './snapshot.js';
import type { Orphan } from './types.js';

/**
 * Stale SwitchOver records: the volume is gone, or the switchover finished (Successful or Errored)
 * longer than `graceMs` ago (by its request timestamp). One in progress on an existing volume is
 * ha-cluster's business, however old.
 */
export function findSwitchOverOrphans(snap: StoreSnapshot, graceMs: number, now = Date.now()): Orphan[] {
  const out: Orphan[] = [];
  for (const rec of snap.switchovers) {
    const s = rec.value;
    let reason: string | null = null;
    if (!hasRecord(snap.cluster, 'VolumeSpec', s.volume))
      reason = `switchover of volume ${s.volume}, which does not exist`;
    else if (isSwitchOverDone(s)) {
      const at = Date.parse(s.timestamp);
      const age = Number.isNaN(at) ? Number.POSITIVE_INFINITY : now - at;
      if (age >= graceMs) {
        const how = switchOverError(s) ? `errored (${switchOverError(s)})` : switchOverStageName(s);
        reason = `switchover ${how} ${Number.isFinite(age) ? `${roughAge(age)} ago` : `at an unreadable time '${s.timestamp}'`}, past the ${formatDuration(graceMs)} grace`;
      }
    }
    if (!reason) continue;
    out.push({
      kind: 'switchover',
      id: s.volume,
      volume: s.volume,
      node: s.node_name || null,
      pool: null,
      reason,
      action: 'delete the key from the store (compare on its mod revision)',
      key: rec.key,
      modRevision: rec.modRevision,
    });
  }
  return out;
}

/** An age rounded down to its largest whole unit: 3h, 12m, 40s. */
function roughAge(ms: number): string {
  if (ms >= 3_600_000) return `${Math.floor(ms / 3_600_000)}h`;
  if (ms >= 60_000) return `${Math.floor(ms / 60_000)}m`;
  return `${Math.max(0, Math.floor(ms / 1000))}s`;
}
