/**
 * YAML (block style) for JSON data, ~10x faster than the `yaml` package's stringify, which builds a
 * document tree per value (100k volumes took 14 s). Strings stay plain only when they cannot be
 * read as anything else; all others are JSON double-quoted, which is valid YAML with the same
 * escapes. Integers beyond 2^53 (bigint) are written digit for digit.
 */
export function toYaml(value: unknown): string {
  const out: string[] = [];
  emit(value, '', out, false);
  return `${out.join('\n')}\n`;
}

/** Plain scalars: identifier-like text (uuids, names, label keys), no `:`, `#` or spaces. */
const PLAIN = /^[A-Za-z0-9_/][A-Za-z0-9_./-]*$/;
/** Words YAML 1.1 or 1.2 readers take for booleans or null. */
const RESERVED = /^(?:true|false|null|yes|no|on|off|y|n|~)$/i;
/** Text YAML readers take for a number (1.1 forms included) or a date. */
const NUMBER_OR_DATE =
  /^(?:[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|0[xXoObB][0-9a-fA-F_]+|\d{4}-\d\d?-\d\d?.*)$/;

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') {
    return PLAIN.test(v) && !RESERVED.test(v) && !NUMBER_OR_DATE.test(v) ? v : JSON.stringify(v);
  }
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : JSON.stringify(String(v));
  return String(v); // boolean
}

function isBlock(v: unknown): v is Record<string, unknown> | unknown[] {
  if (Array.isArray(v)) return v.length > 0;
  return (
    typeof v === 'object' && v !== null && Object.keys(v).some((k) => v[k as keyof typeof v] !== undefined)
  );
}

function emptyOf(v: unknown): string | null {
  if (Array.isArray(v)) return '[]';
  if (typeof v === 'object' && v !== null) return '{}';
  return null;
}

/**
 * Append the lines of `v` at `indent`. `inline` means the first line continues a `- ` already
 * written by the caller (a mapping inside a sequence starts on the dash's line).
 */
function emit(v: unknown, indent: string, out: string[], inline: boolean): void {
  if (!isBlock(v)) {
    const text = emptyOf(v) ?? scalar(v);
    if (inline) out[out.length - 1] += text;
    else out.push(`${indent}${text}`);
    return;
  }
  let first = inline;
  const line = (text: string) => {
    if (first) out[out.length - 1] += text;
    else out.push(`${indent}${text}`);
    first = false;
  };
  if (Array.isArray(v)) {
    for (const item of v) {
      line('- ');
      if (isBlock(item)) emit(item, `${indent}  `, out, true);
      else out[out.length - 1] += emptyOf(item) ?? scalar(item);
    }
    return;
  }
  for (const [key, item] of Object.entries(v)) {
    if (item === undefined) continue;
    const k = scalar(key);
    if (!isBlock(item)) {
      line(`${k}: ${emptyOf(item) ?? scalar(item)}`);
    } else if (Array.isArray(item)) {
      line(`${k}:`);
      emit(item, indent, out, false);
    } else {
      line(`${k}:`);
      emit(item, `${indent}  `, out, false);
    }
  }
}
