import type { ClusterState } from '../catalog/cluster.js';
import type { CoreEvent } from '../catalog/events.js';
import { parseLiveness } from '../catalog/liveness.js';
import { DecodeError, isStorctlError } from '../errors.js';
import { decodeRecord, isSpecType } from '../specs/index.js';
import { clusterPrefix, eventsPrefix, type KeySpace, nodeLivenessPrefix, parseKey } from '../store/keys.js';
import type { WatchEvent } from '../store/types.js';

/** What one watch event changed, so the model knows whether to re-sort its lists. */
export type Applied = 'spec' | 'liveness' | 'event' | 'ignored';

/**
 * Apply one watch event of the cluster prefix to a ClusterState read by readCluster (and to the
 * event log). Idempotent: replaying an event already reflected in the initial read changes nothing,
 * so the watch may start at the revision read before the (paged) initial read.
 */
export function applyWatchEvent(
  state: ClusterState,
  events: CoreEvent[],
  space: KeySpace,
  ev: WatchEvent,
  eventsKept: number,
): Applied {
  const key = ev.type === 'put' ? ev.kv.key : ev.key;
  const livenessPrefix = nodeLivenessPrefix(space);
  if (key.startsWith(livenessPrefix)) {
    const node = key.slice(livenessPrefix.length);
    const live = ev.type === 'put' ? parseLiveness(ev.kv.value) : null;
    if (live) state.liveness.set(node, live);
    else state.liveness.delete(node);
    return 'liveness';
  }
  if (key.startsWith(eventsPrefix(space))) {
    if (ev.type !== 'put') return 'ignored';
    try {
      events.push(JSON.parse(ev.kv.value) as CoreEvent);
    } catch {
      return 'ignored';
    }
    if (events.length > eventsKept) events.splice(0, events.length - eventsKept);
    return 'event';
  }
  if (!key.startsWith(`${clusterPrefix(space)}/`)) return 'ignored';
  const parsed = parseKey(key);
  if (!parsed || !isSpecType(parsed.type)) return 'ignored';
  dropError(state, key);
  if (parsed.type === 'NexusInfo') return applyNexusInfo(state, ev, parsed.id, parsed.volumeId ?? '');
  const map = specMap(state, parsed.type);
  if (ev.type === 'delete') {
    map.delete(parsed.id);
    return 'spec';
  }
  const rec = decode(state, key, ev.kv.value);
  if (!rec) map.delete(parsed.id);
  else map.set(rec.id, rec.value);
  return 'spec';
}

function applyNexusInfo(state: ClusterState, ev: WatchEvent, nexusId: string, volumeId: string): Applied {
  const list = (state.nexusInfo.get(volumeId) ?? []).filter((i) => i.nexusId !== nexusId);
  if (ev.type === 'put') {
    const rec = decode(state, ev.kv.key, ev.kv.value);
    if (rec?.type === 'NexusInfo') list.push({ nexusId, info: rec.value });
  }
  if (list.length) state.nexusInfo.set(volumeId, list);
  else state.nexusInfo.delete(volumeId);
  return 'spec';
}

function specMap(state: ClusterState, type: string): Map<string, unknown> {
  const specs = state.specs as Record<string, Map<string, unknown>>;
  specs[type] ??= new Map();
  return specs[type];
}

function decode(state: ClusterState, key: string, value: string) {
  try {
    return decodeRecord(key, value);
  } catch (err) {
    if (isStorctlError(err) && err.code === 'DECODE_FAILED') {
      state.errors.push(err as DecodeError);
      return null;
    }
    throw err;
  }
}

/** A key written again (or deleted) no longer counts as undecodable. */
function dropError(state: ClusterState, key: string): void {
  if (!state.errors.length) return;
  const kept = state.errors.filter((e) => !(e instanceof DecodeError && e.key === key));
  if (kept.length !== state.errors.length) state.errors = kept;
}
