import { SvcError } from '../svc-error.js';
import { asObject, labelMap, optString, reqBool, reqInt, stringList } from './validate.js';

/** Boundary validation of the replica, nexus and app-node bodies: a bad body is a 400 naming the field. */

const bad = (field: string, why: string) =>
  new SvcError('InvalidArgument', `invalid request: '${field}' ${why}`, `field '${field}' ${why}`);

/** A share protocol: Mayastor's clients ask for nvmf or iscsi, storctl io-engines serve NBD only. */
export function shareProtocol(v: string, field = 'protocol'): 'nbd' {
  if (v === 'nbd') return v;
  if (v === 'nvmf' || v === 'iscsi')
    throw bad(field, `'${v}' is not served by storctl io-engines; they share over NBD: use nbd`);
  throw bad(field, `must be nbd, got '${v.slice(0, 32)}'`);
}

/** `?name=true|false`, absent = `dflt`. */
export function boolQuery(q: URLSearchParams, name: string, dflt = false): boolean {
  const v = q.get(name);
  if (v === null || v === '') return dflt;
  if (v !== 'true' && v !== 'false') throw bad(name, `must be true or false, got '${v.slice(0, 16)}'`);
  return v === 'true';
}

export interface CreateReplicaBody {
  size: number;
  thin: boolean;
  share: 'none' | 'nbd';
  allowedHosts: string[];
}

export function createReplicaBody(body: unknown): CreateReplicaBody {
  const o = asObject(body, 'body');
  const share = optString(o, 'share', 'share') ?? 'none';
  return {
    size: reqInt(o, 'size', 'size', 1),
    thin: reqBool(o, 'thin', 'thin'),
    share: share === 'none' ? 'none' : shareProtocol(share, 'share'),
    allowedHosts: o['allowed-hosts'] == null ? [] : stringList(o['allowed-hosts'], 'allowed-hosts'),
  };
}

/** A nexus child URI: a local replica `bdev:///<uuid>` or a remote one `nbd://host:port/<export>`. */
export function childUriParam(v: string, field: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw bad(
      field,
      `must be a child URI (bdev:///<replica-uuid> or nbd://host:port/<export>), got '${v.slice(0, 96)}'`,
    );
  }
  if (u.protocol !== 'bdev:' && u.protocol !== 'nbd:')
    throw bad(
      field,
      `scheme '${u.protocol}' is not served; use bdev:/// (local replica) or nbd:// (shared replica)`,
    );
  if (u.pathname.replace(/^\/+/, '') === '') throw bad(field, `names no replica: '${v.slice(0, 96)}'`);
  return v;
}

export function createNexusBody(body: unknown): { children: string[]; size: number } {
  const o = asObject(body, 'body');
  if (o.children === undefined) throw bad('children', 'is required');
  const children = stringList(o.children, 'children');
  if (children.length === 0) throw bad('children', 'must name at least one child URI');
  for (const [i, c] of children.entries()) childUriParam(c, `children[${i}]`);
  return { children, size: reqInt(o, 'size', 'size', 1) };
}

const HOST_RE = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)$/;

/** `ip:port` (or `host:port`, `[v6]:port`) of an app node's gRPC server. */
export function endpointParam(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') throw bad(field, 'is required (ip:port)');
  const i = v.lastIndexOf(':');
  const host = v.slice(0, i);
  const port = Number(v.slice(i + 1));
  if (i <= 0 || !HOST_RE.test(host) || !/^\d{1,5}$/.test(v.slice(i + 1)) || port < 1 || port > 65535)
    throw bad(field, `must be ip:port with a port of 1-65535, got '${v.slice(0, 64)}'`);
  return v;
}

export function registerAppNodeBody(body: unknown): {
  endpoint: string;
  labels: Record<string, string> | null;
} {
  const o = asObject(body, 'body');
  const labels = o.labels == null ? null : labelMap(o.labels, 'labels');
  return { endpoint: endpointParam(o.endpoint, 'endpoint'), labels };
}
