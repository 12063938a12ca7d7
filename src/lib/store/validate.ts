import { UsageError } from '../errors.js';
import type { Compare, RangeOptions, TxnOp, TxnRequest, WatchOptions } from './types.js';

/** Input checks shared by both backends, so both reject the same requests the same way. */

export function assertKey(key: unknown, what = 'key'): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new UsageError(`store ${what} must be a non-empty string`);
  }
}

export function assertTtl(ttlSeconds: unknown): asserts ttlSeconds is number {
  if (typeof ttlSeconds !== 'number' || !Number.isInteger(ttlSeconds) || ttlSeconds < 1) {
    throw new UsageError(`lease TTL must be a whole number of seconds >= 1, got ${String(ttlSeconds)}`);
  }
}

const LEASE_HEX = /^[0-9a-f]{1,16}$/;

/** A lease id as given by callers: lowercase hex, '0' meaning none. */
export function assertLeaseId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !LEASE_HEX.test(id)) {
    throw new UsageError(
      `lease id must be lowercase hex (e.g. '694d7a1b2c3d4e5f'), got ${JSON.stringify(id)}`,
    );
  }
}

/**
 * The smallest string greater than every string starting with `prefix` (by UTF-8 byte order, which
 * code-point order preserves): the prefix with its last code point incremented. '' for the empty
 * prefix, meaning "no upper bound".
 */
export function prefixEnd(prefix: string): string {
  if (prefix === '') return '';
  const points = Array.from(prefix);
  const last = points.pop()!.codePointAt(0)!;
  let next = last + 1;
  if (next >= 0xd800 && next <= 0xdfff) next = 0xe000; // skip the surrogate range
  return points.join('') + String.fromCodePoint(Math.min(next, 0x10ffff));
}

/** Byte-wise (UTF-8) comparison, etcd's key and value order. */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export type TxnPlan = TxnRequest & { failure: TxnOp[] };

/** Check a transaction request completely before anything runs. */
export function validateTxn(request: TxnRequest): TxnPlan {
  if (!request || !Array.isArray(request.compare) || !Array.isArray(request.success)) {
    throw new UsageError('a transaction needs compare and success arrays');
  }
  for (const c of request.compare) validateCompare(c);
  const failure = request.failure ?? [];
  if (!Array.isArray(failure)) throw new UsageError('transaction failure branch must be an array');
  for (const op of [...request.success, ...failure]) validateOp(op);
  return { ...request, failure };
}

const OPS = new Set(['==', '!=', '<', '>']);

function validateCompare(c: Compare): void {
  assertKey(c?.key, 'compare key');
  if (!OPS.has(c.op)) throw new UsageError(`compare op must be one of == != < >, got ${String(c.op)}`);
  if (c.target === 'value') {
    if (typeof c.value !== 'string') throw new UsageError('a value compare needs a string value');
  } else if (c.target === 'lease') {
    assertLeaseId(c.value);
    if (c.op !== '==' && c.op !== '!=') throw new UsageError('a lease compare supports only == and !=');
  } else if (c.target === 'mod' || c.target === 'create' || c.target === 'version') {
    if (!Number.isInteger(c.value)) throw new UsageError(`a ${c.target} compare needs a whole number`);
  } else {
    throw new UsageError(`compare target must be mod, create, version, value or lease`);
  }
}

function validateOp(op: TxnOp): void {
  switch (op?.type) {
    case 'put':
      assertKey(op.key);
      if (typeof op.value !== 'string') throw new UsageError(`put of '${op.key}' needs a string value`);
      if (op.lease !== undefined) assertLeaseId(op.lease);
      return;
    case 'get':
    case 'delete':
      assertKey(op.key);
      return;
    case 'deletePrefix':
      if (typeof op.prefix !== 'string') throw new UsageError('deletePrefix needs a string prefix');
      return;
    default:
      throw new UsageError(
        `unknown transaction operation ${JSON.stringify((op as { type?: unknown })?.type)}`,
      );
  }
}

/**
 * A range request as both backends accept it: a string prefix, a whole-number limit (returned; 0 =
 * all), and startKey/endKey under the prefix (endKey may be the prefix's end).
 */
export function checkRange(prefix: string, options: RangeOptions): number {
  if (typeof prefix !== 'string') throw new UsageError('range prefix must be a string');
  const limit = options.limit ?? 0;
  if (!Number.isInteger(limit) || limit < 0)
    throw new UsageError(`range limit must be a whole number >= 0, got ${limit}`);
  const { startKey, endKey } = options;
  if (startKey !== undefined && !startKey.startsWith(prefix)) {
    throw new UsageError(`range start key '${startKey}' does not lie under the prefix '${prefix}'`);
  }
  if (
    endKey !== undefined &&
    !(endKey.startsWith(prefix) && endKey !== prefix) &&
    endKey !== prefixEnd(prefix)
  ) {
    throw new UsageError(`range end key '${endKey}' does not lie under the prefix '${prefix}'`);
  }
  return limit;
}

/** A watch request as both backends accept it; returns the start revision asked for, if any. */
export function checkWatch(prefix: string, options: WatchOptions): number | undefined {
  if (typeof prefix !== 'string') throw new UsageError('watch prefix must be a string');
  const from = options.fromRevision;
  if (from !== undefined && (!Number.isInteger(from) || from < 1)) {
    throw new UsageError(`watch fromRevision must be a whole number >= 1, got ${from}`);
  }
  return from;
}
