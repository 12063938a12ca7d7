/**
 * The field-validation toolkit every spec codec is built from: small codecs that check one parsed
 * JSON value against the shape Mayastor's serde derives accept, and write it back the way serde does.
 *
 * Failures throw `FieldError` carrying the field path (`target.config.reservationType`,
 * `children[1].Replica.uuid`); the spec codec turns it into a `DecodeError` naming the key.
 *
 * Structs remember the JSON object they were decoded from (under the `RAW` symbol: its key order and
 * the fields storctl does not model), so a value read from a real Mayastor store and written back
 * keeps every field, in place. The symbol property is enumerable so `{...spec, status}` keeps it.
 */
import { jsonEqual } from './json.js';

/** A field of a value failed validation; `path` is the field path inside the value. */
export class FieldError extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(`field '${path || '<root>'}' ${detail}`);
  }
}

export interface Codec<T> {
  /** What a valid value looks like, for error messages: `"Creating" | {"Created": …} | …`. */
  readonly expected: string;
  decode(raw: unknown, path: string): T;
  /** The JSON value Mayastor would store (bigints for u64 beyond 2^53). */
  encode(value: T): unknown;
  /** Value of a missing field when serde would accept its absence (Option → null). */
  readonly whenMissing?: () => T;
}

/** Short rendering of an offending value for error messages. */
export function describeValue(raw: unknown): string {
  if (raw === undefined) return 'nothing';
  let text: string;
  try {
    text = typeof raw === 'bigint' ? raw.toString() : (JSON.stringify(raw) ?? String(raw));
  } catch {
    text = String(raw);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function fail(path: string, expected: string, raw: unknown): never {
  throw new FieldError(path, `expected ${expected}, got ${describeValue(raw)}`);
}

export function join(path: string, name: string | number): string {
  if (typeof name === 'number') return `${path}[${name}]`;
  return path ? `${path}.${name}` : name;
}

export function isObject(raw: unknown): raw is Record<string, unknown> {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw);
}

// ---------------------------------------------------------------------------------------------
// Scalars

export const string: Codec<string> = {
  expected: 'a string',
  decode: (raw, path) => (typeof raw === 'string' ? raw : fail(path, 'a string', raw)),
  encode: (v) => v,
};

export const bool: Codec<boolean> = {
  expected: 'true or false',
  decode: (raw, path) => (typeof raw === 'boolean' ? raw : fail(path, 'true or false', raw)),
  encode: (v) => v,
};

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A uuid in its hyphenated form (what Mayastor writes). */
export const uuid: Codec<string> = {
  expected: 'a uuid',
  decode: (raw, path) => (typeof raw === 'string' && UUID_RE.test(raw) ? raw : fail(path, 'a uuid', raw)),
  encode: (v) => v,
};

export function isUuid(text: string): boolean {
  return UUID_RE.test(text);
}

/** Unsigned integer up to `max` (at most 2^53−1: storctl models sizes and counts as numbers). */
export function unsigned(bits: 8 | 16 | 32 | 64): Codec<number> {
  const max = bits === 64 ? Number.MAX_SAFE_INTEGER : 2 ** bits - 1;
  const expected = bits === 64 ? 'an unsigned integer (u64 up to 2^53-1)' : `an unsigned integer (u${bits})`;
  return {
    expected,
    decode: (raw, path) =>
      typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= max
        ? raw
        : fail(path, expected, raw),
    encode: (v) => v,
  };
}
export const u8 = unsigned(8);
export const u16 = unsigned(16);
export const u32 = unsigned(32);
export const u64 = unsigned(64);

/** A full-range u64 as a bigint (reservation keys use all 64 bits). */
export const u64big: Codec<bigint> = {
  expected: 'an unsigned integer (u64)',
  decode: (raw, path) => {
    if (typeof raw === 'bigint' && raw >= 0n && raw < 2n ** 64n) return raw;
    if (typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0) return BigInt(raw);
    return fail(path, 'an unsigned integer (u64)', raw);
  },
  encode: (v) => (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v),
};

/** Any JSON value, kept as is (for parts whose shape storctl does not check). */
export const anyJson: Codec<unknown> = {
  expected: 'any JSON value',
  decode: (raw) => raw,
  encode: (v) => v,
};

/** One of a fixed set of strings: serde's unit-only enum (`"Online"`, `"nvmf"`). */
export function literals<const L extends string>(values: readonly L[]): Codec<L> {
  const set = new Set<string>(values);
  const expected = values.map((v) => JSON.stringify(v)).join(' | ');
  return {
    expected,
    decode: (raw, path) => (typeof raw === 'string' && set.has(raw) ? (raw as L) : fail(path, expected, raw)),
    encode: (v) => v,
  };
}

// ---------------------------------------------------------------------------------------------
// Containers

/** `Option<T>`: null, and a missing field reads as null. */
export function nullable<T>(inner: Codec<T>): Codec<T | null> {
  const expected = `null or ${inner.expected}`;
  return {
    expected,
    decode: (raw, path) => (raw === null ? null : inner.decode(raw, path)),
    encode: (v) => (v === null ? null : inner.encode(v)),
    whenMissing: () => null,
  };
}

export function array<T>(inner: Codec<T>): Codec<T[]> {
  const expected = `a list of ${inner.expected}`;
  return {
    expected,
    decode: (raw, path) => {
      if (!Array.isArray(raw)) return fail(path, expected, raw);
      return raw.map((v, i) => inner.decode(v, join(path, i)));
    },
    encode: (v) => v.map((x) => inner.encode(x)),
  };
}

/** A fixed-length JSON array: serde tuples and tuple variants. */
export function tuple<T extends unknown[]>(...items: { [K in keyof T]: Codec<T[K]> }): Codec<T> {
  const expected = `[${items.map((c) => c.expected).join(', ')}]`;
  return {
    expected,
    decode: (raw, path) => {
      if (!Array.isArray(raw) || raw.length !== items.length) return fail(path, expected, raw);
      return items.map((c, i) => c.decode(raw[i], join(path, i))) as T;
    },
    encode: (v) => items.map((c, i) => c.encode(v[i])),
  };
}

/** A string-keyed map (`HashMap<String, T>`), keys in stored order. */
export function record<T>(inner: Codec<T>): Codec<Record<string, T>> {
  const expected = `an object of ${inner.expected}`;
  return {
    expected,
    decode: (raw, path) => {
      if (!isObject(raw)) return fail(path, expected, raw);
      return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, inner.decode(v, join(path, k))]));
    },
    encode: (v) => Object.fromEntries(Object.entries(v).map(([k, x]) => [k, inner.encode(x)])),
  };
}

/** Lazily resolved codec, for recursive or forward references. */
export function lazy<T>(expected: string, get: () => Codec<T>): Codec<T> {
  return { expected, decode: (raw, path) => get().decode(raw, path), encode: (v) => get().encode(v) };
}

// ---------------------------------------------------------------------------------------------
// serde externally tagged enums

/**
 * serde's default enum form: unit variants as `"Name"`, others as `{"Name": payload}` (newtype →
 * the value, tuple → an array, struct → an object, zero-field tuple → `[]`). `variants` lists every
 * variant in declaration order; `null` marks a unit variant.
 */
export function tagged<T>(variants: Record<string, Codec<unknown> | null>): Codec<T> {
  const units = new Set(Object.keys(variants).filter((k) => variants[k] === null));
  const expected = Object.entries(variants)
    .map(([name, c]) => (c === null ? JSON.stringify(name) : `{${JSON.stringify(name)}: …}`))
    .join(' | ');
  return {
    expected,
    decode: (raw, path) => {
      if (typeof raw === 'string') return units.has(raw) ? (raw as T) : fail(path, expected, raw);
      if (!isObject(raw)) return fail(path, expected, raw);
      const keys = Object.keys(raw);
      const codec = keys.length === 1 ? variants[keys[0]] : undefined;
      if (!codec) return fail(path, expected, raw);
      return { [keys[0]]: codec.decode(raw[keys[0]], join(path, keys[0])) } as T;
    },
    encode: (v) => {
      if (typeof v === 'string') return v;
      const name = Object.keys(v as object)[0];
      const codec = variants[name];
      if (!codec) throw new Error(`cannot encode unknown variant ${name}`);
      return { [name]: codec.encode((v as Record<string, unknown>)[name]) };
    },
  };
}

/** Zero-field tuple variant payload `[]` (e.g. `{"SetDrained":[]}`). */
export const emptyTuple: Codec<[]> = {
  expected: '[]',
  decode: (raw, path) => (Array.isArray(raw) && raw.length === 0 ? [] : fail(path, '[]', raw)),
  encode: () => [],
};

/** Name of an externally tagged enum value: the string itself, or the single key of the object. */
export function variantName(value: string | object): string {
  return typeof value === 'string' ? value : (Object.keys(value)[0] ?? '');
}

/** Try each codec in order (serde `untagged`); `pick` chooses the codec that writes a value. */
export function untagged<T>(
  expected: string,
  options: Codec<unknown>[],
  pick: (value: T) => Codec<unknown>,
): Codec<T> {
  return {
    expected,
    decode: (raw, path) => {
      for (const c of options) {
        try {
          return c.decode(raw, path) as T;
        } catch (err) {
          if (!(err instanceof FieldError)) throw err;
        }
      }
      return fail(path, expected, raw);
    },
    encode: (v) => pick(v).encode(v),
  };
}

// ---------------------------------------------------------------------------------------------
// Structs

/** Key order and unmodelled fields of the JSON object a struct was decoded from. */
export const RAW: unique symbol = Symbol('storctl.specs.raw');

interface RawInfo {
  /** Keys of the stored object, in stored order (interned: many values share one array). */
  keys: readonly string[];
  /** Fields storctl does not model, with their stored values. */
  extra?: Record<string, unknown>;
}

export interface Field<T> {
  codec: Codec<T>;
  /** Value when the field is missing (serde `default`). */
  default?: () => T;
  /** The TypeScript property is optional; missing (or null) in JSON → absent. */
  optional?: boolean;
  /** serde `skip_serializing_if`: leave the field out of a newly written value. */
  omit?(value: T): boolean;
}

export const field = <T>(codec: Codec<T>, opts: Omit<Field<T>, 'codec'> = {}): Field<T> => ({
  codec,
  ...opts,
});

/** An `Option<T>` field serde skips when none: an optional TypeScript property. */
export const optional = <T>(codec: Codec<T>, omit?: (value: T) => boolean): Field<T | undefined> =>
  ({ codec, optional: true, omit }) as Field<T | undefined>;

type Fields<T> = { [K in keyof Required<T>]: Field<T[K]> };

const internedKeys = new Map<string, readonly string[]>();
function intern(keys: string[]): readonly string[] {
  const sig = keys.join('\0');
  let found = internedKeys.get(sig);
  if (!found) {
    found = Object.freeze(keys);
    if (internedKeys.size < 10_000) internedKeys.set(sig, found);
  }
  return found;
}

/**
 * A serde struct. `fields` lists the modelled fields in Mayastor's serialization order; a newly
 * built value is written in that order. A decoded value is written back in its stored key order,
 * unmodelled fields included; fields absent from the stored object stay absent while they still
 * hold their default (Mayastor reads them back identically), so an old-format value round-trips
 * byte for byte.
 */
export function struct<T extends object>(name: string, fields: Fields<T>): Codec<T> {
  const entries = Object.entries(fields) as [string, Field<unknown>][];
  const known = new Set(entries.map(([k]) => k));
  const expected = `an object (${name})`;
  return {
    expected,
    decode: (raw, path) => {
      if (!isObject(raw)) return fail(path, expected, raw);
      const out: Record<string | symbol, unknown> = {};
      for (const [key, f] of entries) {
        const v = Object.hasOwn(raw, key) ? raw[key] : undefined;
        if (v === undefined || (v === null && f.optional)) {
          if (f.optional) continue;
          const dflt = f.default ?? f.codec.whenMissing;
          if (!dflt) throw new FieldError(join(path, key), `is missing (expected ${f.codec.expected})`);
          out[key] = dflt();
        } else {
          out[key] = f.codec.decode(v, join(path, key));
        }
      }
      const keys = Object.keys(raw);
      let extra: Record<string, unknown> | undefined;
      for (const k of keys) {
        if (known.has(k)) continue;
        extra ??= {};
        Object.defineProperty(extra, k, {
          value: raw[k],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      out[RAW] = (extra ? { keys: intern(keys), extra } : { keys: intern(keys) }) satisfies RawInfo;
      return out as T;
    },
    encode: (value) => {
      const v = value as Record<string | symbol, unknown>;
      const info = v[RAW] as RawInfo | undefined;
      const stored = info ? new Set(info.keys) : undefined;
      const emitted = new Map<string, unknown>();
      for (const [key, f] of entries) {
        const x = v[key];
        if (x === undefined) continue;
        const json = f.codec.encode(x);
        if (!stored?.has(key)) {
          if (stored) {
            // Absent when read and still at its default: keep it absent.
            const dflt = f.default ?? f.codec.whenMissing;
            if (dflt && jsonEqual(json, f.codec.encode(dflt()))) continue;
          }
          if (f.omit?.(x)) continue;
        }
        emitted.set(key, json);
      }
      const out: Record<string, unknown> = {};
      const put = (k: string, x: unknown) =>
        Object.defineProperty(out, k, { value: x, enumerable: true, writable: true, configurable: true });
      if (!info) {
        for (const [k, x] of emitted) put(k, x);
        return out;
      }
      // Stored order first; a modelled field new to this value goes right after the modelled field
      // that precedes it in Mayastor's order.
      const order: string[] = info.keys.filter((k) => emitted.has(k) || !known.has(k));
      let prev: string | undefined;
      for (const [key] of entries) {
        if (emitted.has(key) && !order.includes(key)) {
          const at = prev === undefined ? firstKnownIndex(order, known) : order.indexOf(prev) + 1;
          order.splice(at, 0, key);
        }
        if (order.includes(key)) prev = key;
      }
      for (const k of order) put(k, emitted.has(k) ? emitted.get(k) : info.extra?.[k]);
      return out;
    },
  };
}

function firstKnownIndex(order: string[], known: Set<string>): number {
  const i = order.findIndex((k) => known.has(k));
  return i < 0 ? order.length : i;
}

/** Fields of a decoded value that storctl does not model (empty for a newly built value). */
export function unknownFields(value: object): Record<string, unknown> {
  return { ...((value as Record<symbol, RawInfo | undefined>)[RAW]?.extra ?? {}) };
}
