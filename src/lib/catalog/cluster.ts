import { DecodeError, isStorctlError, NotFoundError, type StorctlError } from '../errors.js';
import { codecFor, decodeRecord, type SpecType, type SpecTypes } from '../specs/index.js';
import { clusterPrefix, type KeySpace, nodeLivenessPrefix, parseKey, typePrefix } from '../store/keys.js';
import type { Store } from '../store/types.js';
import type { LiveState } from './live.js';
import { type NodeLiveness, parseLiveness } from './liveness.js';
import { readPrefix } from './pages.js';

/** What the store says about one cluster: decoded specs by id, plus anything that failed to decode. */
export interface ClusterState {
  specs: { [K in SpecType]?: Map<string, SpecTypes[K]> };
  /** NexusInfo records by volume id (several when a volume had several targets). */
  nexusInfo: Map<string, { nexusId: string; info: SpecTypes['NexusInfo'] }[]>;
  /** Node liveness keys present now (lease-bound: a dead node's key is gone). */
  liveness: Map<string, NodeLiveness>;
  /** Values that did not decode; listings show the rest and report these. */
  errors: DecodeError[];
  /** Core's live state, when a `get` listing asked for it and core answered. */
  live?: LiveState;
}

/**
 * What a page about one object reads of the types related to it: only the records whose key or
 * stored value mention one of its ids (a volume's replicas name it as owner, its snapshots as
 * source; a node's replicas name its pools) are decoded — a superset the views then filter
 * exactly. At 100k volumes, decoding every spec to show one took seconds.
 */
export interface Mentioning {
  ids: readonly string[];
  types: readonly SpecType[];
}

/** The types whose records name the volume they belong to (by key or in their value). */
const VOLUME_RELATED: readonly SpecType[] = [
  'VolumeSpec',
  'ReplicaSpec',
  'NexusSpec',
  'NexusInfo',
  'VolumeSnapshot',
  'SwitchOver',
];

/** Reading for a page about one volume: of its related types, only what mentions it. */
export const aboutVolume = (id: string): Mentioning => ({ ids: [id], types: VOLUME_RELATED });

/**
 * Read the given record types of one cluster straight from the store (page by page). Works with
 * every daemon down: this is what `storctl get …` shows. Only decoded values are kept.
 */
export async function readCluster(
  store: Store,
  space: KeySpace,
  types: readonly (SpecType | 'NodeLiveness')[],
  mentioning?: Mentioning,
): Promise<ClusterState> {
  const wanted = (type: SpecType, key: string, value: string) =>
    !mentioning?.types.includes(type) || mentioning.ids.some((id) => key.includes(id) || value.includes(id));
  const state: ClusterState = {
    specs: {},
    nexusInfo: new Map(),
    liveness: new Map(),
    errors: [],
  };
  for (const type of types) {
    if (type === 'NodeLiveness') {
      for await (const kv of readPrefix(store, nodeLivenessPrefix(space))) {
        const live = parseLiveness(kv.value);
        if (live) state.liveness.set(kv.key.slice(nodeLivenessPrefix(space).length), live);
      }
    } else if (type === 'NexusInfo') {
      // NexusInfo keys hang under `volume/<id>/nexus/<id>/info` and `nexus/<id>/info`.
      for (const prefix of [`${clusterPrefix(space)}/volume/`, `${clusterPrefix(space)}/nexus/`]) {
        for await (const kv of readPrefix(store, prefix)) {
          if (!wanted('NexusInfo', kv.key, kv.value)) continue;
          const rec = decodeOrCollect(state, kv.key, kv.value);
          if (rec?.type === 'NexusInfo') {
            const list = state.nexusInfo.get(rec.volumeId ?? '') ?? [];
            list.push({ nexusId: rec.id, info: rec.value });
            state.nexusInfo.set(rec.volumeId ?? '', list);
          }
        }
      }
    } else {
      const map = new Map<string, unknown>();
      for await (const kv of readPrefix(store, typePrefix(space, type))) {
        if (!wanted(type, kv.key, kv.value)) continue;
        const rec = decodeOrCollect(state, kv.key, kv.value);
        if (rec) map.set(rec.id, rec.value);
      }
      (state.specs as Record<string, Map<string, unknown>>)[type] = map;
    }
  }
  return state;
}

function decodeOrCollect(state: ClusterState, key: string, value: string) {
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

/** The decode error of the record of this type and id, when the store holds it undecodable. */
function undecodableRecord(state: ClusterState, type: SpecType, id: string): DecodeError | undefined {
  return state.errors.find((e) => {
    const k = parseKey(e.key);
    return k?.type === type && k.id === id;
  });
}

/**
 * Whether the store holds a record of this type and id: decoded, or there but undecodable. An
 * owner that does not decode is not missing, only unreadable: what it owns is no orphan, and a
 * spec that does not decode still stands for what an io-engine holds.
 */
export function hasRecord(state: ClusterState, type: SpecType, id: string): boolean {
  return (
    Boolean((state.specs[type] as Map<string, unknown> | undefined)?.has(id)) ||
    undecodableRecord(state, type, id) !== undefined
  );
}

/**
 * What to say of a record a command was asked about and did not find among the decoded ones: its
 * decode error when the store holds it but it does not decode (exit 8, and where to look), else
 * NotFound (`resource` names it, as in `storctl get <resource>s`).
 */
export function missingRecord(
  state: ClusterState,
  type: SpecType,
  resource: string,
  id: string,
): StorctlError {
  const err = undecodableRecord(state, type, id);
  if (err)
    return new DecodeError(err.key, err.field, err.detail, {
      suggestions: [`inspect it: storctl store dump | grep '${err.key}'`, 'storctl doctor store'],
    });
  return new NotFoundError(resource, id, { suggestions: [`storctl get ${resource}s`] });
}

/** `localeCompare`'s order, one collator for every comparison. */
export const byId = new Intl.Collator();

/** The decoded specs of one type as an array sorted by id (empty when not read). */
export function specsOf<K extends SpecType>(state: ClusterState, type: K): SpecTypes[K][] {
  const map = state.specs[type] as Map<string, SpecTypes[K]> | undefined;
  return map ? [...map.entries()].sort(([a], [b]) => byId.compare(a, b)).map(([, v]) => v) : [];
}

/** JSON value of a spec as Mayastor stores it (for `-o yaml`). */
export function specJson<K extends SpecType>(type: K, value: SpecTypes[K]): unknown {
  return codecFor(type).toJson(value);
}
