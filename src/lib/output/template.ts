import { UsageError } from '../errors.js';
import { stringifyJson } from '../specs/json.js';

/**
 * `-o jsonpath=TEMPLATE` and `-o custom-columns=SPEC`: the subset of kubectl's templates that
 * scripts use. A path is `.field`, `['field']`, `[n]` (negative from the end), `[a:b]`, `[*]`,
 * `.*` and `..field` (recursive); `$` may start it. A template mixes text with `{path}` and
 * `{"literal\n"}`. Not supported (a usage error, exit 2, naming it): `{range}`/`{end}` and filters
 * `[?(…)]`. Parsed when the flag is read, so a bad expression fails before anything is done.
 */

type Step =
  | { kind: 'field'; name: string }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start?: number; end?: number }
  | { kind: 'wildcard' }
  | { kind: 'recursive'; name: string | null };

export type JsonPath = Step[];

type Segment = { kind: 'text'; text: string } | { kind: 'path'; path: JsonPath };

export type Template =
  | { kind: 'jsonpath'; source: string; segments: Segment[] }
  | { kind: 'custom-columns'; source: string; columns: { header: string; path: JsonPath }[] };

const JSONPATH_FORMS =
  "e.g. -o jsonpath='{.items[*].uuid}' or '{.size}{\"\\n\"}' ({range} and filters are not supported)";

function bad(what: string, source: string, why: string, forms = JSONPATH_FORMS): UsageError {
  return new UsageError(`${what} '${source}': ${why}; ${forms}`);
}

/** A path that does not parse: the reason, worded for the usage error of the whole flag. */
class PathSyntaxError extends Error {}

/** Parse one path (the text inside `{…}`, or a custom column's expression); PathSyntaxError if bad. */
export function parsePath(text: string): JsonPath {
  const src = text.trim();
  const steps: Step[] = [];
  let i = 0;
  if (src[i] === '$' || src[i] === '@') i++; // the root, or (kubectl) the current object: the same here
  const ident = /^[A-Za-z0-9_\-/]+/; // kubectl keys may hold '-' and '/' (label keys)
  if (i < src.length && src[i] !== '.' && src[i] !== '[') {
    // kubectl accepts a leading bare field (`spec.uuid`) as `.spec.uuid`.
    const m = ident.exec(src.slice(i));
    if (!m) throw new PathSyntaxError(`unexpected '${src[i]}' at ${i}`);
    steps.push({ kind: 'field', name: m[0] });
    i += m[0].length;
  }
  while (i < src.length) {
    const c = src[i];
    if (c === '.') {
      if (src[i + 1] === '.') {
        i += 2;
        if (src[i] === '*') {
          steps.push({ kind: 'recursive', name: null });
          i++;
          continue;
        }
        const m = ident.exec(src.slice(i));
        if (!m) throw new PathSyntaxError(`'..' must be followed by a field name (at ${i})`);
        steps.push({ kind: 'recursive', name: m[0] });
        i += m[0].length;
        continue;
      }
      i++;
      if (i === src.length) break; // `.` alone, or a trailing dot: the current object
      if (src[i] === '*') {
        steps.push({ kind: 'wildcard' });
        i++;
        continue;
      }
      if (src[i] === '[') continue;
      const m = ident.exec(src.slice(i));
      if (!m) throw new PathSyntaxError(`expected a field name at ${i}`);
      steps.push({ kind: 'field', name: m[0] });
      i += m[0].length;
      continue;
    }
    if (c === '[') {
      const close = src.indexOf(']', i);
      if (close < 0) throw new PathSyntaxError(`unclosed '[' at ${i}`);
      const inner = src.slice(i + 1, close).trim();
      i = close + 1;
      if (inner === '*') steps.push({ kind: 'wildcard' });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else if (/^(-?\d+)?:(-?\d+)?$/.test(inner)) {
        const [a, b] = inner.split(':');
        steps.push({
          kind: 'slice',
          start: a === '' ? undefined : Number(a),
          end: b === '' ? undefined : Number(b),
        });
      } else if (/^'[^']*'$|^"[^"]*"$/.test(inner)) steps.push({ kind: 'field', name: inner.slice(1, -1) });
      else if (inner.startsWith('?')) throw new PathSyntaxError('filters [?(…)] are not supported');
      else throw new PathSyntaxError(`'[${inner}]' is not an index, a slice, * or a quoted field`);
      continue;
    }
    throw new PathSyntaxError(`unexpected '${c}' at ${i}`);
  }
  return steps;
}

/** Every value the path selects from `root`, in document order. A missing field selects nothing. */
export function evaluatePath(path: JsonPath, root: unknown): unknown[] {
  let current: unknown[] = [root];
  for (const step of path) {
    const next: unknown[] = [];
    for (const v of current) {
      switch (step.kind) {
        case 'field':
          if (isObject(v) && Object.hasOwn(v, step.name)) next.push(v[step.name]);
          break;
        case 'index':
          if (Array.isArray(v)) {
            const i = step.index < 0 ? v.length + step.index : step.index;
            if (i >= 0 && i < v.length) next.push(v[i]);
          }
          break;
        case 'slice':
          if (Array.isArray(v)) next.push(...v.slice(step.start ?? 0, step.end ?? v.length));
          break;
        case 'wildcard':
          if (Array.isArray(v)) next.push(...v);
          else if (isObject(v)) next.push(...Object.values(v));
          break;
        case 'recursive':
          descend(v, step.name, next);
          break;
      }
    }
    current = next;
  }
  return current;
}

function descend(v: unknown, name: string | null, out: unknown[]): void {
  if (Array.isArray(v)) {
    for (const x of v) {
      if (name === null) out.push(x);
      descend(x, name, out);
    }
  } else if (isObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (name === null || k === name) out.push(x);
      descend(x, name, out);
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A selected value as kubectl prints it: strings bare, objects and arrays as compact JSON. */
export function valueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return stringifyJson(v, true);
  return String(v);
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"' };

/** The `}` that closes the `{` at `open`, skipping quoted text (`{"}"}`, `{['a}b']}`); -1 if none. */
function closingBrace(source: string, open: number): number {
  let quote: string | null = null;
  for (let i = open + 1; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '}') return i;
  }
  return -1;
}

/** Parse `-o jsonpath=TEMPLATE`. */
export function parseJsonPathTemplate(source: string): Template {
  if (!source.trim()) throw bad('-o jsonpath', source, 'the template is empty');
  const segments: Segment[] = [];
  let i = 0;
  let text = '';
  while (i < source.length) {
    const c = source[i];
    if (c !== '{') {
      if (c === '}') throw bad('-o jsonpath', source, `'}' without '{' at ${i}`);
      text += c;
      i++;
      continue;
    }
    const close = closingBrace(source, i);
    if (close < 0) throw bad('-o jsonpath', source, `unclosed '{' at ${i}`);
    const inner = source.slice(i + 1, close).trim();
    if (text) segments.push({ kind: 'text', text });
    text = '';
    i = close + 1;
    if (/^"(?:[^"\\]|\\.)*"$/.test(inner)) {
      segments.push({ kind: 'text', text: inner.slice(1, -1).replace(/\\(.)/g, (_m, e) => ESCAPES[e] ?? e) });
    } else if (/^(range|end)\b/.test(inner)) {
      throw bad('-o jsonpath', source, `{${inner.split(/\s/)[0]}} is not supported`);
    } else if (!inner) {
      throw bad('-o jsonpath', source, `empty '{}' at ${close - 1}`);
    } else {
      try {
        segments.push({ kind: 'path', path: parsePath(inner) });
      } catch (err) {
        if (!(err instanceof PathSyntaxError)) throw err;
        throw bad('-o jsonpath', source, `{${inner}}: ${err.message}`);
      }
    }
  }
  if (text) segments.push({ kind: 'text', text });
  return { kind: 'jsonpath', source, segments };
}

const COLUMNS_FORMS =
  'use -o custom-columns=HEADER:.path[,HEADER:.path…], e.g. -o custom-columns=ID:.uuid,SIZE:.size';

/** Parse `-o custom-columns=NAME:.path,…` (a path may also be written `{.path}`, as kubectl allows). */
export function parseCustomColumns(source: string): Template {
  if (!source.trim()) throw bad('-o custom-columns', source, 'no columns given', COLUMNS_FORMS);
  const columns = source.split(',').map((part) => {
    const colon = part.indexOf(':');
    if (colon <= 0 || colon === part.length - 1)
      throw bad('-o custom-columns', source, `'${part}' is not HEADER:.path`, COLUMNS_FORMS);
    let expr = part.slice(colon + 1).trim();
    if (expr.startsWith('{') && expr.endsWith('}')) expr = expr.slice(1, -1);
    let path: JsonPath;
    try {
      path = parsePath(expr);
    } catch (err) {
      if (!(err instanceof PathSyntaxError)) throw err;
      throw bad('-o custom-columns', source, `column ${part.slice(0, colon)}: ${err.message}`, COLUMNS_FORMS);
    }
    return { header: part.slice(0, colon).trim(), path };
  });
  return { kind: 'custom-columns', source, columns };
}

/** The text of a jsonpath template evaluated on `root` (kubectl prints several matches space-separated). */
export function renderJsonPath(template: Extract<Template, { kind: 'jsonpath' }>, root: unknown): string {
  return template.segments
    .map((s) => (s.kind === 'text' ? s.text : evaluatePath(s.path, root).map(valueText).join(' ')))
    .join('');
}

/** One custom-columns row: each column's matches joined by ',', `<none>` when nothing matched. */
export function customColumnCells(
  template: Extract<Template, { kind: 'custom-columns' }>,
  row: unknown,
): string[] {
  return template.columns.map((c) => {
    const values = evaluatePath(c.path, row).filter((v) => v !== null && v !== undefined);
    return values.length ? values.map(valueText).join(',') : '<none>';
  });
}
