/**
 * WatchConfig, key `WatchConfig/<resource>/<id>` (e.g. `WatchConfig/volumes/<volume-uuid>`): the
 * callbacks registered through REST `/watches/…`, as Mayastor's core agent stores them
 * (openebs/mayastor-control-plane `control-plane/agents/src/bin/core/watcher/watch.rs`, camelCase
 * `WatchCfg`): `{"watchId":{"id":{"Volume":"<uuid>"}},"watches":[{"params":{"callback":{"Uri":"…"},"type":"Actual"}}]}`.
 */
import { array, type Codec, literals, string, tagged, uuid, variantName } from './codec.js';
import { specCodec } from './common.js';
import { field, struct } from './struct.js';

/** The watched resource (serde enum `WatchResourceId`), shown as `volumes/<uuid>` in keys and REST. */
export type WatchResourceId =
  | { Node: string }
  | { Pool: string }
  | { Replica: string }
  | { ReplicaState: string }
  | { ReplicaSpec: string }
  | { Nexus: string }
  | { Volume: string };

export const watchTypes = ['Desired', 'Actual', 'All'] as const;
export type WatchType = (typeof watchTypes)[number];

export interface WatchParams {
  callback: { Uri: string };
  type: WatchType;
}

export interface WatchConfig {
  watchId: { id: WatchResourceId };
  watches: { params: WatchParams }[];
}

/** Path segment of each resource kind in keys and REST (`volumes/<uuid>`). */
const RESOURCE_PATH: Record<string, string> = {
  Node: 'nodes',
  Pool: 'pools',
  Replica: 'replicas',
  ReplicaState: 'replicas_state',
  ReplicaSpec: 'replicas_spec',
  Nexus: 'nexuses',
  Volume: 'volumes',
};

/** `volumes/<uuid>`: the key id and the REST `resource` of a watch. */
export function watchResourcePath(id: WatchResourceId): string {
  const kind = variantName(id);
  return `${RESOURCE_PATH[kind]}/${(id as Record<string, string>)[kind]}`;
}

const watchResourceId = tagged<WatchResourceId>({
  Node: string,
  Pool: string,
  Replica: uuid,
  ReplicaState: uuid,
  ReplicaSpec: uuid,
  Nexus: uuid,
  Volume: uuid,
});

const watchParams = struct<WatchParams>('WatchParams', {
  callback: field(tagged<{ Uri: string }>({ Uri: string })),
  type: field(literals(watchTypes)),
});

export const watchConfigCodec: Codec<WatchConfig> = struct<WatchConfig>('WatchCfg', {
  watchId: field(struct<{ id: WatchResourceId }>('WatchCfgId', { id: field(watchResourceId) })),
  watches: field(array(struct<{ params: WatchParams }>('WatchParamsCfg', { params: field(watchParams) }))),
});

export const watchConfig = specCodec<WatchConfig>('WatchConfig', watchConfigCodec, 'watchId.id', (w) =>
  watchResourcePath(w.watchId.id),
);

/** A volume's watch record with these callbacks (`Actual` state changes, as REST creates them). */
export function volumeWatchConfig(volumeId: string, callbacks: string[]): WatchConfig {
  return {
    watchId: { id: { Volume: volumeId } },
    watches: callbacks.map((c) => ({ params: { callback: { Uri: c }, type: 'Actual' } })),
  };
}

/** Callback URLs of a watch record. */
export function watchCallbacks(w: WatchConfig): string[] {
  return w.watches.map((x) => x.params.callback.Uri);
}
