/**
 * Typed codecs of every Mayastor record storctl reads or writes (docs/mayastor-compat.md §1), and the
 * registry `store load` and the `get` commands use: record type (the key segment, or `NexusInfo`)
 * → codec.
 */
import { DecodeError } from '../errors.js';
import { parseKey } from '../store/keys.js';
import { type AppNodeSpec, appNodeSpec } from './app-node.js';
import type { SpecCodec } from './common.js';
import { type CoreRegistryConfig, coreRegistryConfig } from './core-registry-config.js';
import { type NexusSpec, nexusSpec } from './nexus.js';
import { type NexusInfo, nexusInfo } from './nexus-info.js';
import { type NodeSpec, nodeSpec } from './node.js';
import { type PoolSpec, poolSpec } from './pool.js';
import { type ReplicaSpec, replicaSpec } from './replica.js';
import { type StoreLeaseOwner, storeLeaseOwner } from './store-lease-owner.js';
import { type SwitchOverSpec, switchOver } from './switchover.js';
import { type VolumeSpec, volumeSpec } from './volume.js';
import { type VolumeSnapshot, volumeSnapshot } from './volume-snapshot.js';
import { type WatchConfig, watchConfig } from './watch-config.js';

export * from './app-node.js';
export { variantName } from './codec.js';
export * from './common.js';
export * from './core-registry-config.js';
export { parseJson, stringifyJson } from './json.js';
export * from './nexus.js';
export * from './nexus-info.js';
export * from './node.js';
export * from './pool.js';
export * from './replica.js';
export * from './store-lease-owner.js';
export { cloneSpec, plainCopy, RAW, unknownFields } from './struct.js';
export * from './switchover.js';
export * from './volume.js';
export * from './volume-snapshot.js';
export * from './watch-config.js';

/** The TypeScript type of each record type's decoded value. */
export interface SpecTypes {
  VolumeSpec: VolumeSpec;
  ReplicaSpec: ReplicaSpec;
  PoolSpec: PoolSpec;
  NexusSpec: NexusSpec;
  NodeSpec: NodeSpec;
  VolumeSnapshot: VolumeSnapshot;
  AppNodeSpec: AppNodeSpec;
  CoreRegistryConfig: CoreRegistryConfig;
  StoreLeaseOwner: StoreLeaseOwner;
  SwitchOver: SwitchOverSpec;
  NexusInfo: NexusInfo;
  WatchConfig: WatchConfig;
}
export type SpecType = keyof SpecTypes;

/** Record type → codec. (`StoreLeaseLock` keys are etcd lock keys with no JSON value: not here.) */
export const specCodecs: { readonly [K in SpecType]: SpecCodec<SpecTypes[K]> } = {
  VolumeSpec: volumeSpec,
  ReplicaSpec: replicaSpec,
  PoolSpec: poolSpec,
  NexusSpec: nexusSpec,
  NodeSpec: nodeSpec,
  VolumeSnapshot: volumeSnapshot,
  AppNodeSpec: appNodeSpec,
  CoreRegistryConfig: coreRegistryConfig,
  StoreLeaseOwner: storeLeaseOwner,
  SwitchOver: switchOver,
  NexusInfo: nexusInfo,
  WatchConfig: watchConfig,
};

export const specTypes = Object.keys(specCodecs) as SpecType[];

export function isSpecType(type: string): type is SpecType {
  return Object.hasOwn(specCodecs, type);
}

/** The codec of a record type; undefined for a type storctl has no codec for. */
export function codecFor<K extends SpecType>(type: K): SpecCodec<SpecTypes[K]>;
export function codecFor(type: string): SpecCodec<unknown> | undefined;
export function codecFor(type: string): SpecCodec<unknown> | undefined {
  return isSpecType(type) ? (specCodecs[type] as SpecCodec<unknown>) : undefined;
}

/** A stored key/value decoded by the codec its key names. */
export type DecodedRecord = {
  [K in SpecType]: { type: K; id: string; volumeId?: string; key: string; value: SpecTypes[K] };
}[SpecType];

/**
 * Decode a stored key/value by the type its key names. Returns null when the key lies outside the
 * v2 key space or its type has no codec (the caller decides: `store load` refuses unless --force).
 * Throws `DecodeError` when the value is invalid, or (unless `checkId` is false) when the id inside
 * the value differs from the id the key ends with.
 */
export function decodeRecord(
  key: string,
  json: string | unknown,
  { checkId = true } = {},
): DecodedRecord | null {
  const parsed = parseKey(key);
  if (!parsed || !isSpecType(parsed.type)) return null;
  const codec = specCodecs[parsed.type] as SpecCodec<unknown>;
  const value = codec.decode(key, json);
  const id = codec.idOf(value);
  if (checkId && id !== null && id !== parsed.id) {
    throw new DecodeError(key, codec.idField ?? '<root>', `is '${id}' but the key names '${parsed.id}'`);
  }
  const out = { type: parsed.type, id: parsed.id, key, value } as DecodedRecord;
  if (parsed.volumeId !== undefined) out.volumeId = parsed.volumeId;
  return out;
}
