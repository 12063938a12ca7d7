import type { Snapshot } from './model.js';
import { mountTable, nodeTable, poolTable, switchoverTable, type Table, volumeTable } from './rows.js';

export const PANELS = ['nodes', 'pools', 'volumes', 'switchovers', 'mounts', 'events'] as const;
export type PanelId = (typeof PANELS)[number];

export const PANEL_TITLES: Record<PanelId, string> = {
  nodes: 'Nodes',
  pools: 'Pools',
  volumes: 'Volumes',
  switchovers: 'Switchovers',
  mounts: 'S3 mounts',
  events: 'Events',
};

/** The panel `step` places after (or before) `from`, wrapping around. */
export function nextPanel(from: PanelId, step: 1 | -1): PanelId {
  const i = PANELS.indexOf(from);
  return PANELS[(i + step + PANELS.length) % PANELS.length];
}

/** The table a tabular panel shows (the events panel is a log, not a table). */
export function panelTable(
  id: Exclude<PanelId, 'events'>,
  s: Snapshot,
  { barWidth, compact }: { barWidth: number; compact: boolean },
): Table {
  switch (id) {
    case 'nodes':
      return nodeTable(s);
    case 'pools':
      return poolTable(s, barWidth);
    case 'volumes':
      return volumeTable(s, compact);
    case 'switchovers':
      return switchoverTable(s);
    case 'mounts':
      return mountTable(s);
  }
}

/** What an empty panel says instead of rows. */
export function emptyText(id: PanelId, s: Snapshot, filter: string): string {
  if (filter) return `nothing matches '${filter}'`;
  if (id === 'mounts')
    return s.mounts?.kind === 'none'
      ? `${s.mounts.reason}: ${s.mounts.file}`
      : s.mounts
        ? 'the mounter has published no S3 volume'
        : 'no mounter state (no mounter state dir given)';
  if (id === 'switchovers') return 'no switchover in progress';
  return `no ${PANEL_TITLES[id].toLowerCase()} in the store`;
}
