import type { LabelledTopology, Topology } from '../../../lib/specs/index.js';
import { nqnProblem } from '../../../lib/specs/nqn.js';
import { hostNqn } from '../../../lib/specs/volume.js';
import { SvcError } from '../svc-error.js';

/** Boundary validation of REST bodies: a bad body is a 400 that names the field. */

const bad = (field: string, why: string) =>
  new SvcError('InvalidArgument', `invalid request body: '${field}' ${why}`, `field '${field}' ${why}`);

type Obj = Record<string, unknown>;

export function asObject(v: unknown, field: string): Obj {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad(field, 'must be an object');
  return v as Obj;
}

export function reqInt(o: Obj, field: string, path: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const v = o[field];
  if (v === undefined || v === null) throw bad(path, 'is required');
  return int(v, path, min, max);
}

export function int(v: unknown, path: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw bad(path, 'must be an integer');
  if (v < min || v > max) throw bad(path, `must be between ${min} and ${max}`);
  return v;
}

export function reqBool(o: Obj, field: string, path: string): boolean {
  const v = o[field];
  if (typeof v !== 'boolean') throw bad(path, v === undefined ? 'is required' : 'must be a boolean');
  return v;
}

export function optBool(o: Obj, field: string, path: string): boolean | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(path, 'must be a boolean');
  return v;
}

export function optString(o: Obj, field: string, path: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') throw bad(path, 'must be a non-empty string');
  return v;
}

/** Entries of a map or list a request may carry: a store value must stay small. */
const MAX_ENTRIES = 64;

// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const CONTROL_RE = /[\x00-\x1f\x7f]/;

/** A string of at most `max` characters without control characters (NUL, newlines). */
export function text(v: unknown, path: string, max: number): string {
  if (typeof v !== 'string') throw bad(path, 'must be a string');
  if (v.length > max) throw bad(path, `must be at most ${max} characters, got ${v.length}`);
  if (CONTROL_RE.test(v)) throw bad(path, 'must not contain control characters');
  return v;
}

/** A string map (publish context): at most 64 entries, keys up to 256 and values up to 4096 characters. */
export function stringMap(v: unknown, path: string): Record<string, string> {
  const o = asObject(v, path);
  const entries = Object.entries(o);
  if (entries.length > MAX_ENTRIES) throw bad(path, `must have at most ${MAX_ENTRIES} entries`);
  for (const [k, val] of entries) {
    text(k, `${path} key`, 256);
    text(val, `${path}.${k.slice(0, 64)}`, 4096);
  }
  return o as Record<string, string>;
}

/** Labels (and label selectors) by Kubernetes' rules: keys `[prefix/]name`, values a name or empty. */
export function labelMap(v: unknown, path: string): Record<string, string> {
  const o = asObject(v, path);
  const entries = Object.entries(o);
  if (entries.length > MAX_ENTRIES) throw bad(path, `must have at most ${MAX_ENTRIES} labels`);
  for (const [k, val] of entries) {
    labelParam(k, `${path} key '${k.slice(0, 64)}'`, { key: true });
    if (typeof val !== 'string') throw bad(`${path}.${k}`, 'must be a string');
    if (val !== '') labelParam(val, `${path}.${k}`);
  }
  return o as Record<string, string>;
}

export function stringList(v: unknown, path: string, maxLength = 253): string[] {
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw bad(path, 'must be a list of strings');
  if (v.length > MAX_ENTRIES) throw bad(path, `must have at most ${MAX_ENTRIES} entries`);
  for (const [i, s] of v.entries()) text(s, `${path}[${i}]`, maxLength);
  return v as string[];
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function uuidParam(v: string, name: string): string {
  if (!UUID_RE.test(v)) throw bad(name, `must be a uuid, got '${v}'`);
  return v.toLowerCase();
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
export function nameParam(v: string, name: string): string {
  if (!NAME_RE.test(v)) throw bad(name, `must be a name of letters, digits, '.', '_' or '-', got '${v}'`);
  return v;
}

/**
 * A frontend node: a name whose host NQN (`nqn.2019-05.io.openebs:node-name:<node>`, stored in the
 * volume's host ACL) is one Mayastor's deserializer, and storctl's codec, accept (at most 223 bytes).
 */
export function frontendNodeParam(v: string, name: string): string {
  const why = nqnProblem(hostNqn(nameParam(v, name)));
  if (why) throw bad(name, `is too long for a host NQN (nqn.2019-05.io.openebs:node-name:<node>, ${why})`);
  return v;
}

const LABEL_PART_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A label key's prefix: a DNS subdomain of at most 253 characters. */
const LABEL_PREFIX_RE = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A label key (one optional `prefix/`, a DNS subdomain) or value, by Kubernetes' rules. */
export function labelParam(v: string, name: string, { key = false } = {}): string {
  const parts = key ? v.split('/') : [v];
  const [prefix, rest] = parts.length === 2 ? parts : [null, parts[0]];
  if (
    parts.length > 2 ||
    (prefix !== null && !LABEL_PREFIX_RE.test(prefix)) ||
    !LABEL_PART_RE.test(rest ?? '')
  ) {
    throw bad(
      name,
      `must be alphanumeric at both ends with '-', '_' or '.' inside, at most 63 characters${key ? ", with one optional 'prefix/'" : ''}, got '${v.slice(0, 64)}'`,
    );
  }
  return v;
}

/**
 * An object of the placement constraints: a key it does not know is refused, not ignored, so that a
 * misspelt constraint cannot leave a volume placed as if there were none.
 */
function closedObject(v: unknown, path: string, keys: readonly string[]): Obj {
  const o = asObject(v, path);
  const unknown = Object.keys(o).find((k) => !keys.includes(k));
  if (unknown !== undefined)
    throw bad(`${path}.${unknown.slice(0, 64)}`, `is not a known field; ${path} takes ${keys.join(', ')}`);
  return o;
}

function labelled(v: unknown, path: string): LabelledTopology {
  const o = closedObject(v, path, ['exclusion', 'inclusion', 'affinitykey', 'affinity_key']);
  return {
    exclusion: o.exclusion == null ? {} : labelMap(o.exclusion, `${path}.exclusion`),
    inclusion: o.inclusion == null ? {} : labelMap(o.inclusion, `${path}.inclusion`),
    // `affinitykey` as Mayastor's OpenAPI schema names it; `affinity_key` accepted too
    creation_affinity_keys:
      o.affinitykey != null
        ? stringList(o.affinitykey, `${path}.affinitykey`)
        : o.affinity_key == null
          ? null
          : stringList(o.affinity_key, `${path}.affinity_key`),
  };
}

/** REST topology `{node_topology:{explicit|labelled}, pool_topology:{labelled}}` → stored Topology. */
export function topology(v: unknown): Topology | null {
  if (v === undefined || v === null) return null;
  const o = closedObject(v, 'topology', ['node_topology', 'pool_topology']);
  const out: Topology = { node: null, pool: null };
  if (o.node_topology != null) {
    const nt = closedObject(o.node_topology, 'topology.node_topology', ['explicit', 'labelled']);
    if (nt.explicit != null && nt.labelled != null)
      throw bad('topology.node_topology', "takes one of 'explicit' and 'labelled', not both");
    if (nt.explicit != null) {
      const e = closedObject(nt.explicit, 'topology.node_topology.explicit', [
        'allowed_nodes',
        'preferred_nodes',
      ]);
      out.node = {
        Explicit: {
          allowed_nodes:
            e.allowed_nodes == null
              ? []
              : stringList(e.allowed_nodes, 'topology.node_topology.explicit.allowed_nodes'),
          preferred_nodes:
            e.preferred_nodes == null
              ? []
              : stringList(e.preferred_nodes, 'topology.node_topology.explicit.preferred_nodes'),
        },
      };
    } else if (nt.labelled != null) {
      out.node = { Labelled: labelled(nt.labelled, 'topology.node_topology.labelled') };
    } else throw bad('topology.node_topology', "needs 'explicit' or 'labelled'");
  }
  if (o.pool_topology != null) {
    const pt = closedObject(o.pool_topology, 'topology.pool_topology', ['labelled']);
    if (pt.labelled == null) throw bad('topology.pool_topology', "needs 'labelled'");
    out.pool = { Labelled: labelled(pt.labelled, 'topology.pool_topology.labelled') };
  }
  return out;
}

export interface CreateVolumeBody {
  size: number;
  replicas: number;
  thin: boolean;
  policy: { self_heal: boolean };
  topology: Topology | null;
  labels: Record<string, string> | null;
  affinity_group: { id: string } | null;
  max_snapshots?: number;
}

export function createVolumeBody(body: unknown): CreateVolumeBody {
  const o = asObject(body, 'body');
  const size = reqInt(o, 'size', 'size', 1);
  const replicas = reqInt(o, 'replicas', 'replicas', 1, 255);
  const thin = reqBool(o, 'thin', 'thin');
  if (o.policy === undefined) throw bad('policy', 'is required');
  const policy = asObject(o.policy, 'policy');
  const out: CreateVolumeBody = {
    size,
    replicas,
    thin,
    policy: { self_heal: reqBool(policy, 'self_heal', 'policy.self_heal') },
    topology: topology(o.topology),
    labels: o.labels == null ? null : labelMap(o.labels, 'labels'),
    affinity_group:
      o.affinity_group == null
        ? null
        : { id: text(asObject(o.affinity_group, 'affinity_group').id, 'affinity_group.id', 253) },
  };
  if (o.max_snapshots != null) out.max_snapshots = int(o.max_snapshots, 'max_snapshots', 0, 0xffffffff);
  return out;
}

export interface PublishVolumeBody {
  publish_context: Record<string, string>;
  protocol: (typeof PROTOCOLS)[number];
  node?: string;
  reuse_existing?: boolean;
  republish?: boolean;
  frontend_node?: string;
}

export const PROTOCOLS = ['nbd'] as const;

export function publishVolumeBody(body: unknown): PublishVolumeBody {
  const o = asObject(body, 'body');
  if (o.publish_context === undefined) throw bad('publish_context', 'is required');
  const protocol = o.protocol;
  if (typeof protocol !== 'string') throw bad('protocol', 'is required');
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new SvcError(
      'InvalidArgument',
      `invalid request body: 'protocol' ${protocol} is not supported by storctl io-engines; use nbd`,
      `field 'protocol' unsupported: ${protocol}`,
    );
  }
  return {
    publish_context: stringMap(o.publish_context, 'publish_context'),
    protocol: protocol as PublishVolumeBody['protocol'],
    node: o.node == null ? undefined : nameParam(text(o.node, 'node', 253), 'node'),
    reuse_existing: optBool(o, 'reuse_existing', 'reuse_existing'),
    republish: optBool(o, 'republish', 'republish'),
    frontend_node:
      o.frontend_node == null
        ? undefined
        : frontendNodeParam(text(o.frontend_node, 'frontend_node', 253), 'frontend_node'),
  };
}

export interface CreatePoolBody {
  disks: string[];
  labels: Record<string, string> | null;
  /** storctl extension: the capacity of a directory pool in bytes (io-engine pools are directories). */
  capacity?: number;
}

export function createPoolBody(body: unknown): CreatePoolBody {
  const o = asObject(body, 'body');
  if (o.disks === undefined) throw bad('disks', 'is required');
  const disks = stringList(o.disks, 'disks', 4096);
  if (disks.length !== 1) throw bad('disks', 'must name exactly one disk (a pool directory or URI)');
  const out: CreatePoolBody = { disks, labels: o.labels == null ? null : labelMap(o.labels, 'labels') };
  if (o.capacity != null) out.capacity = int(o.capacity, 'capacity', 1);
  return out;
}
