/**
 * JSON text ⇄ value, lossless for Mayastor's u64 fields.
 *
 * Mayastor writes u64 values (e.g. a target's `reservationKey`, the low 64 bits of a nexus uuid) that
 * exceed 2^53; `JSON.parse` would round them, and a value written back would then differ from the
 * one read. Here integers outside the safe range become `bigint`s and are written back digit for
 * digit. Node 20's `JSON.parse` cannot hand a reviver the source text, hence the small parser; the
 * common case (no run of 16+ digits in the text) still goes through the native `JSON.parse`.
 */

/** Any parsed JSON value; integers beyond ±(2^53−1) are `bigint`. */
export type JsonValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

// Every integer of at most 15 digits is a safe integer; only longer digit runs need the slow path.
const LONG_DIGITS = /\d{16}/;
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const WS = /[ \t\n\r]*/y;

/** Parse JSON text. Throws `SyntaxError` on invalid JSON. */
export function parseJson(text: string): unknown {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  const p = new BigIntJsonParser(text);
  const value = p.value();
  p.skipWs();
  if (p.pos !== text.length) p.fail('unexpected trailing characters');
  return value;
}

class BigIntJsonParser {
  pos = 0;
  constructor(private readonly text: string) {}

  fail(what: string): never {
    throw new SyntaxError(`${what} in JSON at position ${this.pos}`);
  }

  skipWs(): void {
    WS.lastIndex = this.pos;
    WS.exec(this.text);
    this.pos = WS.lastIndex;
  }

  value(): unknown {
    this.skipWs();
    const c = this.text[this.pos];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    return this.fail(c === undefined ? 'unexpected end' : `unexpected token ${JSON.stringify(c)}`);
  }

  private object(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.pos++;
    this.skipWs();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWs();
      if (this.text[this.pos] !== '"') this.fail('expected a property name');
      const key = this.string();
      this.skipWs();
      if (this.text[this.pos] !== ':') this.fail("expected ':'");
      this.pos++;
      // defineProperty: a key named "__proto__" must stay a plain property, as with JSON.parse.
      Object.defineProperty(out, key, {
        value: this.value(),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      this.skipWs();
      const c = this.text[this.pos++];
      if (c === '}') return out;
      if (c !== ',') this.fail("expected ',' or '}'");
    }
  }

  private array(): unknown[] {
    const out: unknown[] = [];
    this.pos++;
    this.skipWs();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.skipWs();
      const c = this.text[this.pos++];
      if (c === ']') return out;
      if (c !== ',') this.fail("expected ',' or ']'");
    }
  }

  private string(): string {
    const start = this.pos;
    let i = start + 1;
    for (;;) {
      const c = this.text.charCodeAt(i);
      if (Number.isNaN(c)) {
        this.pos = i;
        this.fail('unterminated string');
      }
      if (c === 0x5c) i += 2;
      else if (c === 0x22) break;
      else i++;
    }
    this.pos = i + 1;
    // The native parser validates escapes and control characters of the literal.
    return JSON.parse(this.text.slice(start, this.pos)) as string;
  }

  private number(): number | bigint {
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.text);
    if (!m) return this.fail('invalid number');
    this.pos = NUMBER.lastIndex;
    const n = Number(m[0]);
    if (m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(n)) return BigInt(m[0]);
    return n;
  }
}

/**
 * Compact JSON text (serde_json's layout: no spaces), `bigint`s as bare integers. Object keys keep
 * their insertion order; properties whose value is `undefined` are left out, as JSON.stringify does.
 */
export function stringifyJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        return `[${value.map((v) => (v === undefined || typeof v === 'function' ? 'null' : stringifyJson(v))).join(',')}]`;
      }
      const parts: string[] = [];
      for (const [k, v] of Object.entries(value)) {
        if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
        parts.push(`${JSON.stringify(k)}:${stringifyJson(v)}`);
      }
      return `{${parts.join(',')}}`;
    }
    default:
      return 'null';
  }
}

/** Structural equality of two JSON values (object key order ignored; 1 and 1n are equal). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if ((typeof a === 'bigint' || typeof a === 'number') && (typeof b === 'bigint' || typeof b === 'number')) {
    if (typeof a === 'number' && typeof b === 'number') return false; // a !== b above
    const n = typeof a === 'number' ? a : (b as number);
    const big = typeof a === 'bigint' ? a : (b as bigint);
    return Number.isInteger(n) && BigInt(n) === big;
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  const ak = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const bk = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ak.length !== bk.length) return false;
  return ak.every(
    (k) =>
      Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}
