/**
 * The field-validation toolkit every spec codec is built from: small codecs that check one parsed
 * JSON value against the shape Mayastor's serde derives accept, and write it back the way serde does.
 *
 * Failures throw `FieldError` carrying the field path (`target.config.reservationType`,
 * `children[1].Replica.uuid`); the spec codec turns it into a `DecodeError` naming the key.
 *
 * Structs (struct.ts) build on these.
 */
import { markedBigInt, stringifyJson, unmark } from './json.js';

/**
 * A field of a value failed validation. Codecs throw it with no path; each enclosing struct, list or
 * enum variant prepends its segment on the way out (so the success path builds no path strings).
 */
export class FieldError extends Error {
  readonly segments: (string | number)[] = [];
  constructor(readonly detail: string) {
    super(detail);
  }
  /** `target.config.reservationType`, `children[1].Replica.uuid`; '' for the value itself. */
  get path(): string {
    let out = '';
    for (const s of this.segments) out = typeof s === 'number' ? `${out}[${s}]` : out ? `${out}.${s}` : s;
    return out;
  }
}

/** Prepend `segment` to a FieldError's path (rethrow helper for containers). */
export function within(err: unknown, segment: string | number): unknown {
  if (err instanceof FieldError) err.segments.unshift(segment);
  return err;
}

export interface Codec<T> {
  /** What a valid value looks like, for error messages: `"Creating" | {"Created": …} | …`. */
  readonly expected: string;
  /** Validate a parsed JSON value; throws FieldError. */
  decode(raw: unknown): T;
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
    text = stringifyJson(raw);
  } catch {
    text = String(raw);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function fail(expected: string, raw: unknown): never {
  throw new FieldError(`expected ${expected}, got ${describeValue(raw)}`);
}

export function isObject(raw: unknown): raw is Record<string, unknown> {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw);
}

// ---------------------------------------------------------------------------------------------
// Scalars

export const string: Codec<string> = {
  expected: 'a string',
  // A marked string is a big integer in disguise (json.ts), not a string.
  decode: (raw) => (typeof raw === 'string' && markedBigInt(raw) === undefined ? raw : fail('a string', raw)),
  encode: (v) => v,
};

export const bool: Codec<boolean> = {
  expected: 'true or false',
  decode: (raw) => (typeof raw === 'boolean' ? raw : fail('true or false', raw)),
  encode: (v) => v,
};

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A uuid in its hyphenated form (what Mayastor writes). */
export const uuid: Codec<string> = {
  expected: 'a uuid',
  decode: (raw) => (typeof raw === 'string' && UUID_RE.test(raw) ? raw : fail('a uuid', raw)),
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
    decode: (raw) =>
      typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= max ? raw : fail(expected, raw),
    encode: (v) => v,
  };
}
export const u8 = unsigned(8);
export const u16 = unsigned(16);
export const u32 = unsigned(32);
export const u64 = unsigned(64);

const U64_MAX = 2n ** 64n - 1n;

/** A full-range u64 as a bigint (reservation keys use all 64 bits). */
export const u64big: Codec<bigint> = {
  expected: 'an unsigned integer (u64)',
  decode: (raw) => {
    if (typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0) return BigInt(raw);
    const big = typeof raw === 'bigint' ? raw : markedBigInt(raw);
    if (big !== undefined && big >= 0n && big <= U64_MAX) return big;
    return fail('an unsigned integer (u64)', raw);
  },
  encode: (v) => {
    if (v <= MAX_SAFE) return Number(v);
    bigIntsEncoded++;
    return v;
  },
};

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
let bigIntsEncoded = 0;
/** How many bigints `u64big` has written so far (lets the text encoder skip a failing fast path). */
export function bigIntCount(): number {
  return bigIntsEncoded;
}

/** Any JSON value, kept as is (for parts whose shape storctl does not check). */
export const anyJson: Codec<unknown> = {
  expected: 'any JSON value',
  decode: (raw) => unmark(raw),
  encode: (v) => v,
};

/** One of a fixed set of strings: serde's unit-only enum (`"Online"`, `"nvmf"`). */
export function literals<const L extends string>(values: readonly L[]): Codec<L> {
  const set = new Set<string>(values);
  const expected = values.map((v) => JSON.stringify(v)).join(' | ');
  return {
    expected,
    decode: (raw) => (typeof raw === 'string' && set.has(raw) ? (raw as L) : fail(expected, raw)),
    encode: (v) => v,
  };
}

// ---------------------------------------------------------------------------------------------
// Containers

/** `Option<T>`: null, and a missing field reads as null. */
export function nullable<T>(inner: Codec<T>): Codec<T | null> {
  return {
    expected: `null or ${inner.expected}`,
    decode: (raw) => (raw === null ? null : inner.decode(raw)),
    encode: (v) => (v === null ? null : inner.encode(v)),
    whenMissing: () => null,
  };
}

export function array<T>(inner: Codec<T>): Codec<T[]> {
  const expected = `a list of ${inner.expected}`;
  return {
    expected,
    decode: (raw) => {
      if (!Array.isArray(raw)) return fail(expected, raw);
      const out: T[] = new Array(raw.length);
      for (let i = 0; i < raw.length; i++) {
        try {
          out[i] = inner.decode(raw[i]);
        } catch (err) {
          throw within(err, i);
        }
      }
      return out;
    },
    encode: (v) => v.map((x) => inner.encode(x)),
  };
}

/** A fixed-length JSON array: serde tuples and tuple variants. */
export function tuple<T extends unknown[]>(...items: { [K in keyof T]: Codec<T[K]> }): Codec<T> {
  const expected = `[${items.map((c) => c.expected).join(', ')}]`;
  return {
    expected,
    decode: (raw) => {
      if (!Array.isArray(raw) || raw.length !== items.length) return fail(expected, raw);
      return items.map((c, i) => {
        try {
          return c.decode(raw[i]);
        } catch (err) {
          throw within(err, i);
        }
      }) as T;
    },
    encode: (v) => items.map((c, i) => c.encode(v[i])),
  };
}

/** A string-keyed map (`HashMap<String, T>`), keys in stored order. */
export function record<T>(inner: Codec<T>): Codec<Record<string, T>> {
  const expected = `an object of ${inner.expected}`;
  return {
    expected,
    decode: (raw) => {
      if (!isObject(raw)) return fail(expected, raw);
      const out: Record<string, T> = {};
      for (const k in raw) {
        if (!Object.hasOwn(raw, k)) continue;
        let v: T;
        try {
          v = inner.decode(raw[k]);
        } catch (err) {
          throw within(err, k);
        }
        setOwn(out, k, v);
      }
      return out;
    },
    encode: (v) => {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v)) setOwn(out, k, inner.encode(v[k]));
      return out;
    },
  };
}

/** Plain assignment, except for a key named `__proto__`, which must stay an own data property. */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
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
    decode: (raw) => {
      if (typeof raw === 'string') return units.has(raw) ? (raw as T) : fail(expected, raw);
      if (!isObject(raw)) return fail(expected, raw);
      let name: string | undefined;
      for (const k in raw) {
        if (name !== undefined) return fail(expected, raw);
        name = k;
      }
      const codec = name === undefined || !Object.hasOwn(variants, name) ? null : variants[name];
      if (!codec) return fail(expected, raw);
      try {
        return { [name as string]: codec.decode(raw[name as string]) } as T;
      } catch (err) {
        throw within(err, name as string);
      }
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
  decode: (raw) => (Array.isArray(raw) && raw.length === 0 ? [] : fail('[]', raw)),
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
    decode: (raw) => {
      for (const c of options) {
        try {
          return c.decode(raw) as T;
        } catch (err) {
          if (!(err instanceof FieldError)) throw err;
        }
      }
      return fail(expected, raw);
    },
    encode: (v) => pick(v).encode(v),
  };
}
