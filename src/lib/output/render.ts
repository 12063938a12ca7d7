import Table from 'cli-table3';
import { stringify } from 'yaml';
import type { OutputFormat } from './format.js';

export const NONE = '<none>';

/** One table column: a header and how to read a cell from a row. */
export interface Column<T> {
  header: string;
  get: (row: T) => string | number | boolean | null | undefined;
  /** Shown only with `-o wide`. */
  wide?: boolean;
}

/** The value a listing prints: rows for tables, full objects for json/yaml. */
export interface Listing<T> {
  rows: T[];
  columns: Column<T>[];
  /** What json/yaml print for each row (default: the row itself). */
  object?: (row: T) => unknown;
  /** Print a single object (not an array) for json/yaml, for `get volume ID` style commands. */
  single?: boolean;
}

const cell = (v: string | number | boolean | null | undefined): string =>
  v === null || v === undefined || v === '' ? NONE : String(v);

/** Borderless, left-aligned table like kubectl-mayastor's (prettytable FORMAT_CLEAN). */
export function renderTable(headers: string[], rows: string[][]): string {
  const table = new Table({
    head: headers,
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: ' ',
    },
    style: { head: [], border: [], 'padding-left': 1, 'padding-right': 1, compact: true },
  });
  table.push(...rows);
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

export function render<T>(listing: Listing<T>, format: OutputFormat): string {
  if (format === 'json' || format === 'yaml') {
    const objects = listing.rows.map((r) => (listing.object ? listing.object(r) : r));
    const value = listing.single ? (objects[0] ?? null) : objects;
    return format === 'json' ? prettyJson(value) : stringify(value).trimEnd();
  }
  const columns = listing.columns.filter((c) => format === 'wide' || !c.wide);
  return renderTable(
    columns.map((c) => c.header),
    listing.rows.map((r) => columns.map((c) => cell(c.get(r)))),
  );
}

/**
 * Indented JSON that keeps u64 values (bigints, e.g. `reservationKey`) exact: they are written as bare
 * digits, never rounded through a double.
 */
export function prettyJson(value: unknown): string {
  const marker = '\u0000bigint:';
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${marker}${v}` : v), 2);
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}
