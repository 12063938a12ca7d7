/**
 * Mayastor's v2 key space (docs/mayastor-compat.md §1.1–1.2):
 * `/openebs.io/mayastor/apis/v0/clusters/<cluster-id>/namespaces/<namespace>/<Type>/<id>`.
 */

export const PRODUCT_PREFIX = '/openebs.io/mayastor/apis/v0';

/** Record types storctl reads and writes, spelled exactly as Mayastor's StorableObjectType. */
export const StorableType = {
  VolumeSpec: 'VolumeSpec',
  ReplicaSpec: 'ReplicaSpec',
  PoolSpec: 'PoolSpec',
  NexusSpec: 'NexusSpec',
  NodeSpec: 'NodeSpec',
  VolumeSnapshot: 'VolumeSnapshot',
  AppNodeSpec: 'AppNodeSpec',
  CoreRegistryConfig: 'CoreRegistryConfig',
  StoreLeaseOwner: 'StoreLeaseOwner',
  StoreLeaseLock: 'StoreLeaseLock',
  SwitchOver: 'SwitchOver',
} as const;
export type StorableType = (typeof StorableType)[keyof typeof StorableType];

export interface KeySpace {
  clusterId: string;
  namespace: string;
}

export function clusterPrefix({ clusterId, namespace }: KeySpace): string {
  return `${PRODUCT_PREFIX}/clusters/${clusterId}/namespaces/${namespace}`;
}

/** Prefix of every key of one type, with a trailing slash (safe for prefix ranges). */
export function typePrefix(space: KeySpace, type: string): string {
  return `${clusterPrefix(space)}/${type}/`;
}

export function objectKey(space: KeySpace, type: string, id: string): string {
  return `${clusterPrefix(space)}/${type}/${id}`;
}

/** NexusInfo key of a nexus owned by a volume (or unowned: `nexus/<nexus>/info`). */
export function nexusInfoKey(space: KeySpace, nexusId: string, volumeId?: string | null): string {
  const base = clusterPrefix(space);
  return volumeId ? `${base}/volume/${volumeId}/nexus/${nexusId}/info` : `${base}/nexus/${nexusId}/info`;
}

/** Prefix under which every NexusInfo of one volume lives. */
export function volumeNexusInfoPrefix(space: KeySpace, volumeId: string): string {
  return `${clusterPrefix(space)}/volume/${volumeId}/nexus/`;
}

export interface ParsedKey {
  clusterId: string;
  namespace: string;
  /** The record type (`VolumeSpec`…), or `NexusInfo` for NexusInfo keys. */
  type: string;
  id: string;
  /** For NexusInfo keys: the owning volume, if any. */
  volumeId?: string;
}

const KEY_RE = /^\/openebs\.io\/mayastor\/apis\/v0\/clusters\/([^/]+)\/namespaces\/([^/]+)\/(.+)$/;
const NEXUS_INFO_RE = /^(?:volume\/([^/]+)\/)?nexus\/([^/]+)\/info$/;

/** Split a key of the v2 key space into its parts; null when it lies outside it. */
export function parseKey(key: string): ParsedKey | null {
  const m = KEY_RE.exec(key);
  if (!m) return null;
  const [, clusterId, namespace, rest] = m;
  const info = NEXUS_INFO_RE.exec(rest);
  if (info) return { clusterId, namespace, type: 'NexusInfo', id: info[2], volumeId: info[1] };
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return null;
  return { clusterId, namespace, type: rest.slice(0, slash), id: rest.slice(slash + 1) };
}

/** First key after every key that starts with `prefix` (etcd's range_end). Keys are ASCII. */
export function prefixRangeEnd(prefix: string): string {
  if (prefix === '') return '\0';
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/**
 * storctl's own records live under `<cluster prefix>/storctl/…`, apart from Mayastor's types, so a
 * future Mayastor type can never collide with them.
 */
export function storctlPrefix(space: KeySpace): string {
  return `${clusterPrefix(space)}/storctl/`;
}

/** Lease-bound liveness key of an io-engine node: present while the node heartbeats. */
export function nodeLivenessKey(space: KeySpace, nodeId: string): string {
  return `${storctlPrefix(space)}NodeLiveness/${nodeId}`;
}

export function nodeLivenessPrefix(space: KeySpace): string {
  return `${storctlPrefix(space)}NodeLiveness/`;
}

/** Prefix of core's lifecycle event log (keys sort by time; see core's `eventKey`). */
export function eventsPrefix(space: KeySpace): string {
  return `${storctlPrefix(space)}Events/`;
}
