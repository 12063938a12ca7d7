import { createHash } from 'node:crypto';

/** Namespace of storctl's UUIDv5 target ids (a fixed random UUID, never to change). */
export const TARGET_NAMESPACE = '6f1c3f9e-5a2b-4d8e-9c47-0b8e2d51a7c3';

/** RFC 4122 UUID version 5 (SHA-1) of `name` in `namespace`. */
export function uuidV5(name: string, namespace = TARGET_NAMESPACE): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  const b = Buffer.from(hash.subarray(0, 16));
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The id of a target path: names its unit, its credential files and its log file. */
export const targetId = (target: string) => uuidV5(target);

export const UNIT_PREFIX = 'mount-s3-';
const UNIT_RE =
  /^mount-s3-(.+)-([0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\.service$/;

/** `mount-s3-<version>-<uuidv5 of target>.service`: derivable, so a restart finds the unit again. */
export function unitNameFor(target: string, version: string): string {
  return `${UNIT_PREFIX}${version.replace(/[^A-Za-z0-9.:_-]/g, '_')}-${targetId(target)}.service`;
}

export function parseUnitName(name: string): { version: string; id: string } | undefined {
  const m = UNIT_RE.exec(name);
  return m ? { version: m[1], id: m[2] } : undefined;
}
