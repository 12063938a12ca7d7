/**
 * serde structs. A decoded struct remembers the JSON object it came from (under the `RAW` symbol:
 * its key order and the fields storctl does not model), so a value read from a real Mayastor store
 * and written back keeps every field, in place. The symbol property is enumerable, so the usual
 * `{ ...spec, status }` update keeps it; JSON.stringify and YAML ignore it.
 *
 * Each struct gets its own small generated decode/encode function: `storctl get volumes` decodes
 * 100k specs, and per-struct code keeps V8's property accesses monomorphic (a shared generic loop
 * was several times slower). Only field names from this package's own definitions enter the code,
 * each as a JSON string literal.
 */
import { type Codec, FieldError, fail, setOwn, within } from './codec.js';
import { jsonEqual, unmark } from './json.js';

/** Key order and unmodelled fields of the JSON object a struct was decoded from. */
export const RAW: unique symbol = Symbol('storctl.specs.raw');

interface RawInfo {
  /** Keys of the stored object, in stored order (interned: values of one shape share one array). */
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

/** How a stored key list relates to one struct's fields (cached per interned list). */
interface KeyShape {
  /** Modelled fields present in the stored object. */
  present: Set<string>;
  /** No unmodelled fields, and the modelled ones in Mayastor's order. */
  canonical: boolean;
  /** The RawInfo every value of this shape without unmodelled fields shares. */
  shared: RawInfo;
}

/**
 * A serde struct. `fields` lists the modelled fields in Mayastor's serialization order; a newly
 * built value is written in that order, leaving out fields whose `omit` says so. A decoded value is
 * written back in its stored key order, unmodelled fields included; a field absent from the stored
 * object stays absent while it still holds its default (Mayastor reads it back identically), so an
 * old-format value round-trips byte for byte. A modelled field new to the value goes right after the
 * modelled field that precedes it in Mayastor's order.
 */
export function struct<T extends object>(name: string, fields: Fields<T>): Codec<T> {
  const entries = Object.entries(fields) as [string, Field<unknown>][];
  if (Object.hasOwn(fields, '__proto__'))
    throw new Error(`struct ${name}: a field cannot be named __proto__`);
  const names = entries.map(([k]) => k);
  const known = new Set(names);
  const codecs = entries.map(([, f]) => f.codec);
  const defaults = entries.map(([, f]) => f.default ?? f.codec.whenMissing);
  const omits = entries.map(([, f]) => f.omit?.bind(f));
  const expected = `an object (${name})`;
  const shapes = new WeakMap<readonly string[], KeyShape>();
  let lastKeys: readonly string[] = [];

  function shapeOf(keys: readonly string[]): KeyShape {
    let shape = shapes.get(keys);
    if (!shape) {
      const modelled = keys.filter((k) => known.has(k));
      const order = names.filter((k) => modelled.includes(k));
      const canonical = modelled.length === keys.length && order.every((k, i) => modelled[i] === k);
      shape = { present: new Set(modelled), canonical, shared: Object.freeze({ keys }) };
      shapes.set(keys, shape);
    }
    return shape;
  }

  /** Interned key list of `raw`; most values of a type share the previous one. */
  function storedKeys(raw: Record<string, unknown>): readonly string[] {
    const keys = Object.keys(raw);
    const last = lastKeys;
    if (keys.length === last.length) {
      let i = 0;
      while (i < keys.length && keys[i] === last[i]) i++;
      if (i === keys.length) return last;
    }
    lastKeys = intern(keys);
    return lastKeys;
  }

  function rawInfo(raw: Record<string, unknown>): RawInfo {
    const keys = storedKeys(raw);
    const shape = shapeOf(keys);
    if (shape.canonical) return shape.shared;
    let extra: Record<string, unknown> | undefined;
    for (const k of keys) {
      if (known.has(k)) continue;
      extra ??= {};
      setOwn(extra, k, unmark(raw[k]));
    }
    return extra ? { keys, extra } : shape.shared;
  }

  function missing(i: number): unknown {
    const dflt = defaults[i];
    if (!dflt) throw within(new FieldError(`is missing (expected ${codecs[i].expected})`), names[i]);
    return dflt();
  }

  // Keep a field absent when it was absent from the stored object and still holds its default.
  function keepAbsent(i: number, json: unknown): boolean {
    const dflt = defaults[i];
    return dflt !== undefined && jsonEqual(json, codecs[i].encode(dflt()));
  }

  const helpers = { codecs, omits, fail, within, missing, keepAbsent, rawInfo, shapeOf, RAW, expected };
  const decode = generateDecode(entries, helpers) as (raw: unknown) => T;
  const encodeOrdered = generateEncode(entries, helpers) as (
    v: unknown,
    shape: KeyShape | undefined,
  ) => unknown;

  // Stored order is not Mayastor's, or unmodelled fields: merge stored order with new fields.
  function encodeMerged(v: Record<string, unknown>, info: RawInfo, shape: KeyShape): unknown {
    const emitted = encodeOrdered(v, shape) as Record<string, unknown>;
    const has = (k: string) => Object.hasOwn(emitted, k);
    const order = info.keys.filter((k) => has(k) || !known.has(k));
    let prev: string | undefined;
    for (const key of names) {
      if (!has(key)) continue;
      if (!order.includes(key)) {
        const first = order.findIndex((k) => known.has(k));
        order.splice(
          prev === undefined ? (first < 0 ? order.length : first) : order.indexOf(prev) + 1,
          0,
          key,
        );
      }
      prev = key;
    }
    const out: Record<string, unknown> = {};
    for (const k of order) setOwn(out, k, has(k) ? emitted[k] : info.extra?.[k]);
    return out;
  }

  return {
    expected,
    decode,
    encode: (value) => {
      const v = value as Record<string | symbol, unknown>;
      const info = v[RAW] as RawInfo | undefined;
      if (!info) return encodeOrdered(v, undefined);
      const shape = shapeOf(info.keys);
      return shape.canonical
        ? encodeOrdered(v, shape)
        : encodeMerged(v as Record<string, unknown>, info, shape);
    },
  };
}

type Helpers = Record<string, unknown>;

function generateDecode(entries: [string, Field<unknown>][], h: Helpers): (raw: unknown) => unknown {
  const lines = [
    `if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return h.fail(h.expected, raw);`,
    'const out = {};',
    'let v;',
  ];
  entries.forEach(([key, f], i) => {
    const k = JSON.stringify(key);
    // Field names that exist on Object.prototype would read inherited values: check ownership.
    const read = key in Object.prototype ? `Object.hasOwn(raw, ${k}) ? raw[${k}] : undefined` : `raw[${k}]`;
    const absent = f.optional ? 'v === undefined || v === null' : 'v === undefined';
    const onAbsent = f.optional ? '' : `out[${k}] = h.missing(${i});`;
    lines.push(
      `v = ${read};`,
      `if (${absent}) { ${onAbsent} } else { try { out[${k}] = h.codecs[${i}].decode(v); } catch (e) { throw h.within(e, ${k}); } }`,
    );
  });
  lines.push('out[h.RAW] = h.rawInfo(raw);', 'return out;');
  return new Function('h', `return function decode(raw) {\n${lines.join('\n')}\n};`)(h);
}

function generateEncode(
  entries: [string, Field<unknown>][],
  h: Helpers,
): (v: unknown, shape: unknown) => unknown {
  const lines = ['const out = {};', 'let x;'];
  entries.forEach(([key], i) => {
    const k = JSON.stringify(key);
    lines.push(
      `x = v[${k}];`,
      `if (x !== undefined) {`,
      `  const j = h.codecs[${i}].encode(x);`,
      `  if (shape === undefined ? !(h.omits[${i}] && h.omits[${i}](x)) : shape.present.has(${k}) || !h.keepAbsent(${i}, j) && !(h.omits[${i}] && h.omits[${i}](x))) out[${k}] = j;`,
      `}`,
    );
  });
  lines.push('return out;');
  return new Function('h', `return function encode(v, shape) {\n${lines.join('\n')}\n};`)(h);
}

/** Fields of a decoded value that storctl does not model (empty for a newly built value). */
export function unknownFields(value: object): Record<string, unknown> {
  return { ...((value as Record<symbol, RawInfo | undefined>)[RAW]?.extra ?? {}) };
}

/**
 * A copy of a decoded value without its stored layout (key order, unmodelled fields): what code
 * would build from scratch. Tests compare with `toEqual` against it (`toEqual` sees the RAW symbol).
 */
export function plainCopy<T>(value: T): T {
  return structuredClone(value);
}

/**
 * A deep copy of a decoded (or newly built) value that keeps its stored layout (`RAW`), so editing the
 * copy and writing it back still preserves the fields storctl does not model. (`structuredClone`
 * drops symbol properties.) Values are JSON-shaped: objects, arrays, strings, numbers, bigints.
 */
export function cloneSpec<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(cloneSpec) as T;
  const src = value as Record<string | symbol, unknown>;
  const out: Record<string | symbol, unknown> = {};
  for (const k of Object.keys(src)) setOwn(out as Record<string, unknown>, k, cloneSpec(src[k]));
  // RawInfo is never mutated: the copy shares it.
  if (src[RAW] !== undefined) out[RAW] = src[RAW];
  return out as T;
}
