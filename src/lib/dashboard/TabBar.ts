import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import type { Theme } from './theme.js';

export interface Tab {
  id: string;
  title: string;
  count: number | null;
}

/** The panels, the active one marked `[…]` (visible without colour too). */
export function TabBar({ tabs, active, theme }: { tabs: Tab[]; active: string; theme: Theme }) {
  return h(
    Box,
    { height: 1, overflow: 'hidden' },
    ...tabs.map((t) => {
      const label = `${t.title}${t.count === null ? '' : ` ${t.count}`}`;
      const on = t.id === active;
      return h(
        Text,
        { key: t.id, bold: on, color: on ? theme.accent : undefined, wrap: 'truncate' },
        on ? `[${label}] ` : ` ${label}  `,
      );
    }),
  );
}
