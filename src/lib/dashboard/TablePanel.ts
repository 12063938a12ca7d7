import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import { clip, columnWidths, fitLine } from './layout.js';
import type { Table } from './rows.js';
import type { Theme } from './theme.js';

export interface TablePanelProps {
  table: Table;
  /** Ids of the rows after the filter. */
  ids: string[];
  selected: number;
  start: number;
  end: number;
  width: number;
  height: number;
  theme: Theme;
  /** Said when there are no rows. */
  empty: string;
}

/** A table of which only the rows in [start, end) are rendered (windowed), the selected one marked `>`. */
export function TablePanel(p: TablePanelProps) {
  const widths = columnWidths(p.table.columns, p.width - 2);
  const header = fitLine(
    p.table.columns.map((c) => c.header),
    widths,
    p.width - 2,
  );
  const lines = p.ids.slice(p.start, p.end).map((id, i) => {
    const row = p.table.row(id);
    const index = p.start + i;
    const on = index === p.selected;
    return h(
      Text,
      {
        key: id,
        color: p.theme.tone(row.tone),
        bold: on,
        inverse: on && p.theme.color,
        wrap: 'truncate',
      },
      `${on ? '>' : ' '} ${fitLine(row.cells, widths, p.width - 2)}`,
    );
  });
  const position = p.ids.length > p.end - p.start ? ` ${p.start + 1}-${p.end} of ${p.ids.length}` : '';
  return h(
    Box,
    { flexDirection: 'column', height: p.height, overflow: 'hidden' },
    h(Text, { bold: true, wrap: 'truncate' }, clip(`  ${header}`, p.width - position.length) + position),
    ...(lines.length ? lines : [h(Text, { key: 'empty', dimColor: true }, `  ${p.empty}`)]),
  );
}
