import type { Column } from './rows.js';

/** Widths of a table's columns in `width` terminal columns: fixed ones first, the rest to the flexible one. */
export function columnWidths(columns: Column[], width: number): number[] {
  const fixed = columns.reduce((n, c) => n + (c.width ?? 0), 0);
  const rest = Math.max(0, width - fixed);
  return columns.map((c) => c.width ?? rest);
}

/** Cells padded or cut to their widths, as one line that never wraps. */
export function fitLine(cells: string[], widths: number[], width: number): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) {
    const w = widths[i] ?? 0;
    if (w <= 0) continue;
    const cell = cells[i] ?? '';
    line += cell.length >= w ? `${cell.slice(0, Math.max(0, w - 1))} ` : cell.padEnd(w);
  }
  return clip(line.trimEnd(), width);
}

/** A line cut to `width` (with `…` when cut). */
export function clip(text: string, width: number): string {
  if (text.length <= width) return text;
  return width <= 1 ? text.slice(0, width) : `${text.slice(0, width - 1)}…`;
}
