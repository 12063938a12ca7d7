import type { CoreEvent } from '../catalog/events.js';
import { tableLines } from '../output/render.js';

/**
 * A `describe` page, like `kubectl describe`: aligned `Field: value` lines, then titled sections
 * holding more fields or a small table. The same object is what `-o json|yaml` prints.
 */
export interface Page {
  fields: [string, string | number | boolean | null | undefined][];
  sections: Section[];
}

export interface Section {
  title: string;
  fields?: Page['fields'];
  table?: { headers: string[]; rows: (string | number | null | undefined)[][] };
  /** Said instead of an empty table. */
  empty?: string;
}

const text = (v: string | number | boolean | null | undefined) =>
  v === null || v === undefined || v === '' ? '<none>' : String(v);

function* fieldLines(fields: Page['fields'], indent: string): Generator<string> {
  const width = Math.max(0, ...fields.map(([k]) => k.length)) + 2;
  for (const [k, v] of fields) yield `${indent}${`${k}:`.padEnd(width)}${text(v)}`;
}

export function* pageLines(page: Page): Generator<string> {
  yield* fieldLines(page.fields, '');
  for (const s of page.sections) {
    yield `${s.title}:`;
    if (s.fields) yield* fieldLines(s.fields, '  ');
    if (s.table) {
      if (s.table.rows.length === 0) yield `  ${s.empty ?? '<none>'}`;
      else
        for (const l of tableLines(
          s.table.headers,
          s.table.rows.map((r) => r.map(text)),
        ))
          yield ` ${l}`;
    }
  }
}

/** The page as one plain object: fields by name, sections by title (tables as row objects). */
export function pageObject(page: Page): Record<string, unknown> {
  const fields = (f: Page['fields']) => Object.fromEntries(f.map(([k, v]) => [k, v ?? null]));
  const out: Record<string, unknown> = fields(page.fields);
  for (const s of page.sections) {
    out[s.title] = s.table
      ? s.table.rows.map((r) => Object.fromEntries(s.table!.headers.map((h, i) => [h, r[i] ?? null])))
      : fields(s.fields ?? []);
  }
  return out;
}

/** The last events of an object, oldest first (the log is bounded; older ones are gone). */
export function eventsSection(events: CoreEvent[], last = 15): Section {
  return {
    title: 'Events',
    table: {
      headers: ['TIME', 'RESOURCE', 'ACTION', 'MESSAGE'],
      rows: events
        .slice(-last)
        .map((e) => [
          e.time,
          `${e.resource}/${/^[0-9a-f-]{36}$/.test(e.id) ? e.id.slice(0, 8) : e.id}`,
          e.action,
          e.message,
        ]),
    },
  };
}
