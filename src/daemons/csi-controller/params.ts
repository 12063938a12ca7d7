import { createHash } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { blockCapabilityProblem, capabilityKey } from '../../lib/csi/block-capability.js';
import type { VolumeCapability } from '../../lib/csi/types.js';
import { invalid, validateMapSize } from '../../lib/csi/validate.js';
import { GrpcError } from '../../lib/grpc/status.js';

/** StorageClass / VolumeSnapshotClass parameters and names → what core's REST API takes. */

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID_RE.test(s);

/** RFC 4122 version 5 (SHA-1, name based) UUID of `name` in namespace `ns`. */
export function uuidV5(name: string, ns: string): string {
  const hash = createHash('sha1')
    .update(Buffer.from(ns.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const h = hash.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The namespace of storctl's name-derived ids: UUID v5 of `csi.storctl.io` in the DNS namespace. */
const NAME_NAMESPACE = uuidV5('csi.storctl.io', '6ba7b810-9dad-11d1-80b4-00c04fd430c8');

/**
 * Volume id of a CreateVolume name: `pvc-<uuid>` (Kubernetes' external-provisioner) uses the uuid,
 * as Mayastor does; any other name its stable UUID v5, so repeats of a generic client's call land on
 * the same volume.
 */
export function volumeIdOfName(name: string): string {
  const m = /^pvc-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(name);
  return m ? m[1].toLowerCase() : uuidV5(`volume/${name}`, NAME_NAMESPACE);
}

/** Snapshot id of a CreateSnapshot name: `snapshot-<uuid>` uses the uuid, anything else UUID v5. */
export function snapshotIdOfName(name: string): string {
  const m = /^snapshot-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(name);
  return m ? m[1].toLowerCase() : uuidV5(`snapshot/${name}`, NAME_NAMESPACE);
}

export type QuiesceFs = 'none' | 'freeze';

export interface CreateParams {
  replicas: number;
  thin: boolean;
  fsType: string;
  maxSnapshots?: number;
  quiesceFs: QuiesceFs;
  topology?: RestTopology;
}

export interface RestTopology {
  node_topology?: { labelled: { inclusion: Record<string, string>; exclusion: Record<string, string> } };
  pool_topology?: {
    labelled: {
      inclusion: Record<string, string>;
      exclusion: Record<string, string>;
      affinity_key?: string[];
    };
  };
}

/** The protocols storctl's io-engines serve (core's PublishVolumeBody). */
export const SERVED_PROTOCOLS = ['nbd'] as const;

const POOL_TOPOLOGY = ['poolAffinityTopologyLabel', 'poolHasTopologyKey', 'poolAffinityTopologyKey'];
const NODE_TOPOLOGY = ['nodeAffinityTopologyLabel', 'nodeHasTopologyKey'];
const TOPOLOGY_PARAMS = [...POOL_TOPOLOGY, ...NODE_TOPOLOGY, 'nodeSpreadTopologyKey'];
export const VOLUME_PARAMS = [
  'repl',
  'thin',
  'fsType',
  'protocol',
  'maxSnapshots',
  'quiesceFs',
  ...TOPOLOGY_PARAMS,
];
export const SNAPSHOT_PARAMS = ['quiesceFs'];

/** Keys the Kubernetes sidecars add (`--extra-create-metadata`): accepted and passed over. */
const isSidecarKey = (k: string) => k.startsWith('csi.storage.k8s.io/');

export function checkKnownKeys(params: Record<string, string>, known: readonly string[], what: string): void {
  validateMapSize(params, what);
  for (const k of Object.keys(params)) {
    if (!known.includes(k) && !isSidecarKey(k))
      throw invalid(`${what}: unknown parameter '${k.slice(0, 64)}' (accepted: ${known.join(', ')})`);
  }
}

function uint(value: string, key: string, min: number, max: number): number {
  if (!/^\d{1,10}$/.test(value.trim()))
    throw invalid(`parameter ${key}='${value.slice(0, 32)}' is not a number`);
  const n = Number(value.trim());
  if (n < min || n > max) throw invalid(`parameter ${key}=${n} must be between ${min} and ${max}`);
  return n;
}

export function parseQuiesce(value: string | undefined): QuiesceFs {
  if (value === undefined || value === '' || value === 'none') return 'none';
  if (value === 'freeze') return 'freeze';
  throw invalid(`parameter quiesceFs='${value.slice(0, 32)}' must be none or freeze`);
}

/** `key: value` lines (or `key=value`, comma separated) of a topology parameter. */
function labelLines(value: string, key: string, withValues: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of value.split(/[\n,]/)) {
    const line = raw.trim();
    if (!line) continue;
    if (!withValues) {
      if (/[:=\s]/.test(line)) throw invalid(`parameter ${key}: '${line.slice(0, 64)}' must be a label key`);
      out[line] = '';
      continue;
    }
    const m = /^([^:=\s]+)\s*[:=]\s*(\S*)$/.exec(line);
    if (!m) throw invalid(`parameter ${key}: '${line.slice(0, 64)}' must be 'key: value'`);
    out[m[1]] = m[2];
  }
  if (!Object.keys(out).length) throw invalid(`parameter ${key} names no label`);
  return out;
}

function topologyOf(p: Record<string, string>): RestTopology | undefined {
  const pool = POOL_TOPOLOGY.filter((k) => p[k] !== undefined);
  const node = NODE_TOPOLOGY.filter((k) => p[k] !== undefined);
  if (pool.length + node.length > 1)
    throw invalid(`multiple topology parameters are not allowed (${[...pool, ...node].join(', ')})`);
  const out: RestTopology = {};
  if (pool.length) {
    const k = pool[0];
    const labels = labelLines(p[k], k, k === 'poolAffinityTopologyLabel');
    out.pool_topology = {
      labelled:
        k === 'poolAffinityTopologyKey'
          ? { inclusion: {}, exclusion: {}, affinity_key: Object.keys(labels) }
          : { inclusion: labels, exclusion: {} },
    };
  }
  const inclusion = node.length
    ? labelLines(p[node[0]], node[0], node[0] === 'nodeAffinityTopologyLabel')
    : {};
  const exclusion =
    p.nodeSpreadTopologyKey !== undefined
      ? labelLines(p.nodeSpreadTopologyKey, 'nodeSpreadTopologyKey', false)
      : {};
  const shared = Object.keys(exclusion).filter((k) => k in inclusion);
  if (shared.length)
    throw invalid(
      `nodeSpreadTopologyKey shares key(s) ${shared.join(', ')} with ${node[0]}; use one or the other`,
    );
  if (node.length || p.nodeSpreadTopologyKey !== undefined)
    out.node_topology = { labelled: { inclusion, exclusion } };
  return out.node_topology || out.pool_topology ? out : undefined;
}

/** Validate and parse CreateVolume parameters; unknown keys and bad values are INVALID_ARGUMENT. */
export function parseCreateParams(p: Record<string, string>): CreateParams {
  checkKnownKeys(p, VOLUME_PARAMS, 'parameters');
  const protocol = p.protocol ?? 'nbd';
  if (!(SERVED_PROTOCOLS as readonly string[]).includes(protocol))
    throw invalid(
      `parameter protocol='${protocol.slice(0, 32)}' is not served: storctl io-engines serve ${SERVED_PROTOCOLS.join(', ')}`,
    );
  let thin = false;
  if (p.thin !== undefined) {
    if (p.thin !== 'true' && p.thin !== 'false')
      throw invalid(`parameter thin='${p.thin.slice(0, 32)}' must be true or false`);
    thin = p.thin === 'true';
  }
  const fsType = p.fsType ?? '';
  if (fsType !== '' && fsType !== 'ext4' && fsType !== 'xfs')
    throw invalid(`parameter fsType='${fsType.slice(0, 32)}' is not supported (ext4, xfs)`);
  return {
    replicas: p.repl === undefined ? 1 : uint(p.repl, 'repl', 1, 255),
    thin,
    fsType,
    maxSnapshots:
      p.maxSnapshots === undefined ? undefined : uint(p.maxSnapshots, 'maxSnapshots', 0, 0xffffffff),
    quiesceFs: parseQuiesce(p.quiesceFs),
    topology: topologyOf(p),
  };
}

/** Every capability must be servable; the first problem is INVALID_ARGUMENT. */
export function requireCapabilities(
  caps: VolumeCapability[] | undefined,
  field = 'volume_capabilities',
): void {
  if (!caps?.length) throw invalid(`${field} is required`);
  for (const c of caps) {
    const problem = blockCapabilityProblem(c);
    if (problem) throw invalid(`${field}: ${problem}`);
  }
}

export function capabilitiesKey(caps: VolumeCapability[]): string[] {
  return [...new Set(caps.map(capabilityKey))].sort();
}

const MiB = 1024 * 1024;
const roundUp = (n: number, to: number) => Math.ceil(n / to) * to;

export interface CapacityRangeIn {
  required_bytes?: string | number;
  limit_bytes?: string | number;
}

function bytes(v: string | number | undefined, field: string): number {
  const n = Number(v ?? 0);
  if (!Number.isSafeInteger(n)) throw new GrpcError(status.OUT_OF_RANGE, `${field} ${v} is too large`);
  if (n < 0) throw invalid(`${field} must not be negative`);
  return n;
}

/**
 * The size to provision for a capacity range: required_bytes rounded up to whole MiB (then to 4 KiB,
 * then 512 bytes when the limit leaves no room), never above limit_bytes; `fallback` when the range
 * says nothing. A range that cannot be met is OUT_OF_RANGE, as the spec says.
 */
export function sizeFor(range: CapacityRangeIn | null | undefined, fallback: number): number {
  const required = bytes(range?.required_bytes, 'capacity_range.required_bytes');
  const limit = bytes(range?.limit_bytes, 'capacity_range.limit_bytes');
  if (limit && limit < required)
    throw new GrpcError(
      status.OUT_OF_RANGE,
      `capacity_range.limit_bytes ${limit} is below required_bytes ${required}`,
    );
  if (!required) {
    if (!limit || limit >= fallback) return fallback;
    const size = Math.floor(limit / 512) * 512;
    if (!size)
      throw new GrpcError(status.OUT_OF_RANGE, `capacity_range.limit_bytes ${limit} is below 512 bytes`);
    return size;
  }
  for (const unit of [MiB, 4096, 512]) {
    const size = roundUp(required, unit);
    if (!limit || size <= limit) return size;
  }
  throw new GrpcError(
    status.OUT_OF_RANGE,
    `no size in [${required}, ${limit}] is a multiple of 512 bytes; widen capacity_range`,
  );
}

/** Does an existing size satisfy a range (a repeated CreateVolume, an expand already done)? */
export function sizeFits(size: number, range: CapacityRangeIn | null | undefined): boolean {
  const required = Number(range?.required_bytes ?? 0);
  const limit = Number(range?.limit_bytes ?? 0);
  return size >= required && (!limit || size <= limit);
}

/** A short digest of what makes two CreateVolume requests the same volume (capacity aside). */
export function requestDigest(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
}

export function sortedMap(m: Record<string, string> | undefined): [string, string][] {
  return Object.entries(m ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
