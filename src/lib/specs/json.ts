/**
 * JSON text ⇄ value, lossless for Mayastor's u64 fields.
 *
 * Mayastor writes u64 values (e.g. a target's `reservationKey`, the low 64 bits of a nexus uuid) that
 * exceed 2^53; `JSON.parse` would round them, and a value written back would then differ from the
 * one read. Here integers outside the safe range become `bigint`s and are written back digit for
 * digit. Node 20's `JSON.parse` cannot hand a reviver the source text, so big integer literals are
 * quoted before the native parse and turned into bigints after it; the common case (no run of 16+
 * digits in the text) is a plain `JSON.parse`.
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
const JSON_INTEGER = /^-?(?:0|[1-9]\d*)$/;
/**
 * A big integer travels through JSON.parse as a string with this prefix (NUL cannot start a real
 * stored string in practice). `parseJson` turns marks into bigints; the spec codecs read marks
 * directly (u64 fields) so a large value costs no extra pass over the parsed tree.
 */
export const MARK = '\u0000u64:';

/** Parse JSON text; unsafe integers become `bigint`s. Throws `SyntaxError` on invalid JSON. */
export function parseJson(text: string): unknown {
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  return unmark(parseJsonMarked(text));
}

/** Parse JSON text; unsafe integers become marked strings (see MARK). */
export function parseJsonMarked(text: string): unknown {
  return parseWithMarks(text); // one scan for digit runs; none found is a plain JSON.parse
}

/**
 * Quote every integer literal that does not fit a double exactly. Fast path: a run of 16+ digits
 * standing where a number token can (after `:`, `,` or `[`, before `,`, `}` or `]`) is quoted. If
 * such a run was really inside a string literal, the quote inserted there ends that string and the
 * `\` that follows is outside any string, which JSON never allows: the parse fails and the exact
 * pass, which tracks string literals, decides instead. 2x faster than tokenizing every string.
 */
function parseWithMarks(text: string): unknown {
  let marked = '';
  let from = 0;
  LONG_DIGIT_RUN.lastIndex = 0;
  for (let m = LONG_DIGIT_RUN.exec(text); m !== null; m = LONG_DIGIT_RUN.exec(text)) {
    const end = m.index + m[0].length;
    const start = m.index > 0 && text.charCodeAt(m.index - 1) === MINUS ? m.index - 1 : m.index;
    if (!NUMBER_END.has(charAfter(text, end)) || !NUMBER_START.has(charBefore(text, start))) continue;
    const token = text.slice(start, end);
    if (!JSON_INTEGER.test(token) || Number.isSafeInteger(Number(token))) continue;
    marked += `${text.slice(from, start)}"\\u0000u64:${token}"`;
    from = end;
  }
  if (from === 0) return JSON.parse(text);
  try {
    return JSON.parse(marked + text.slice(from));
  } catch {
    return JSON.parse(markBigIntegersExactly(text));
  }
}

const LONG_DIGIT_RUN = /\d{16,}/g;
const MINUS = 0x2d;
/** `:`, `,`, `[`, or the start of the text (0). */
const NUMBER_START = new Set([0x3a, 0x2c, 0x5b, 0]);
/** `,`, `}`, `]`, or the end of the text (0). */
const NUMBER_END = new Set([0x2c, 0x7d, 0x5d, 0]);

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
/** First non-space character code at or after `i` (0 at the end). */
function charAfter(text: string, i: number): number {
  while (i < text.length && isJsonSpace(text.charCodeAt(i))) i++;
  return i < text.length ? text.charCodeAt(i) : 0;
}
/** Last non-space character code before `i` (0 at the start). */
function charBefore(text: string, i: number): number {
  i--;
  while (i >= 0 && isJsonSpace(text.charCodeAt(i))) i--;
  return i >= 0 ? text.charCodeAt(i) : 0;
}

/**
 * String literals, or number tokens whose integer part has 16+ digits (never the middle of a number:
 * the lookbehind refuses a digit run that follows a digit, a dot, an exponent or a sign).
 */
const STRING_OR_LONG_NUMBER = /"(?:[^"\\]|\\.)*"|(?<![\d.eE+-])-?\d{16,}(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** The exact pass: skips string literals, quotes unsafe integer tokens. */
function markBigIntegersExactly(text: string): string {
  return text.replace(STRING_OR_LONG_NUMBER, (tok) =>
    tok.charCodeAt(0) !== 0x22 && JSON_INTEGER.test(tok) && !Number.isSafeInteger(Number(tok))
      ? `"\\u0000u64:${tok}"`
      : tok,
  );
}

/** The bigint a marked string stands for, or undefined. */
export function markedBigInt(v: unknown): bigint | undefined {
  return typeof v === 'string' && v.charCodeAt(0) === 0 && v.startsWith(MARK)
    ? BigInt(v.slice(MARK.length))
    : undefined;
}

/** Replace marked strings in a parsed tree (in place) by bigints. */
export function unmark(v: unknown): unknown {
  if (typeof v === 'string') return markedBigInt(v) ?? v;
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = unmark(v[i]);
  } else {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = unmark(o[k]);
  }
  return v;
}

const MARKED_TEXT = /"\\u0000u64:(-?\d+)"/g;

/**
 * Compact JSON text (serde_json's layout: no spaces), `bigint`s (and marked strings) as bare
 * integers. Object keys keep their insertion order; `undefined` properties are left out, as
 * JSON.stringify does. `mayHoldBigInt` skips the native attempt that would throw on a bigint.
 */
export function stringifyJson(value: unknown, mayHoldBigInt = false): string {
  let text: string | undefined;
  if (!mayHoldBigInt) {
    try {
      text = JSON.stringify(value) ?? 'null';
    } catch (err) {
      if (!(err instanceof TypeError)) throw err;
    }
  }
  // A bigint somewhere: write it as a marked string, unquoted below.
  text ??= JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? MARK + v.toString() : v)) ?? 'null';
  return text.includes('\\u0000u64:') ? text.replace(MARKED_TEXT, '$1') : text;
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
