import { type ClusterState, readCluster } from '../catalog/cluster.js';
import { readPrefix } from '../catalog/pages.js';
import { type DecodeError, isStorctlError } from '../errors.js';
import { decodeRecord, type NexusInfo, type SwitchOverSpec } from '../specs/index.js';
import { clusterPrefix, type KeySpace, typePrefix } from '../store/keys.js';
import type { Store } from '../store/types.js';

/** A stored record with the key and mod revision a later compare-and-delete guards on. */
export interface StoredRecord<T> {
  key: string;
  modRevision: number;
  value: T;
}

/** What the store says, read in the order that keeps the orphan checks safe (see `readSnapshot`). */
export interface StoreSnapshot {
  /** NexusInfo records: the volume they hang under (null: `nexus/<id>/info`) and the nexus id. */
  nexusInfo: (StoredRecord<NexusInfo> & { volumeId: string | null; nexusId: string })[];
  switchovers: StoredRecord<SwitchOverSpec>[];
  cluster: ClusterState;
}

/**
 * Read everything the finders need. Owned records come first and their owners last: core writes an
 * owner (a VolumeSpec, a NexusSpec) before or with what it owns, so whatever an owned record names
 * was already stored when it was read, and an owner missing from the later read is really gone (or
 * went meanwhile) — never one created in between. Values that do not decode are collected in
 * `cluster.errors` (exit 8 after the report), not fatal.
 */
export async function readSnapshot(store: Store, space: KeySpace): Promise<StoreSnapshot> {
  const errors: DecodeError[] = [];
  const decode = (key: string, value: string) => {
    try {
      return decodeRecord(key, value);
    } catch (err) {
      if (isStorctlError(err) && err.code === 'DECODE_FAILED') {
        errors.push(err as DecodeError);
        return null;
      }
      throw err;
    }
  };
  const nexusInfo: StoreSnapshot['nexusInfo'] = [];
  for (const prefix of [`${clusterPrefix(space)}/volume/`, `${clusterPrefix(space)}/nexus/`]) {
    for await (const kv of readPrefix(store, prefix)) {
      const rec = decode(kv.key, kv.value);
      if (rec?.type === 'NexusInfo')
        nexusInfo.push({
          key: kv.key,
          modRevision: kv.modRevision,
          value: rec.value,
          volumeId: rec.volumeId ?? null,
          nexusId: rec.id,
        });
    }
  }
  const switchovers: StoreSnapshot['switchovers'] = [];
  for await (const kv of readPrefix(store, typePrefix(space, 'SwitchOver'))) {
    const rec = decode(kv.key, kv.value);
    if (rec?.type === 'SwitchOver')
      switchovers.push({ key: kv.key, modRevision: kv.modRevision, value: rec.value });
  }
  const cluster = await readCluster(store, space, [
    'ReplicaSpec',
    'VolumeSnapshot',
    'NexusSpec',
    'VolumeSpec',
    'PoolSpec',
    'NodeSpec',
    'NodeLiveness',
  ]);
  cluster.errors.unshift(...errors);
  return { nexusInfo, switchovers, cluster };
}
