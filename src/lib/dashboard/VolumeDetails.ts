import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import { pageLines } from '../describe/page.js';
import { volumePage } from '../describe/volume.js';
import { clip } from './layout.js';
import type { Snapshot } from './model.js';

/** The lines of `storctl describe volume ID`, from the dashboard's state (null once the volume is gone). */
export function volumeDetailLines(s: Snapshot, volumeId: string): string[] | null {
  const v = s.state.specs.VolumeSpec?.get(volumeId);
  if (!v) return null;
  return [...pageLines(volumePage(s.state, v, s.events, s.live?.volumes.get(volumeId) ?? null))];
}

/** A volume's details, scrolled `scroll` lines down, live as the store changes. */
export function VolumeDetails({
  lines,
  volumeId,
  scroll,
  width,
  height,
}: {
  lines: string[] | null;
  volumeId: string;
  scroll: number;
  width: number;
  height: number;
}) {
  const body = lines ?? [`volume ${volumeId} was deleted`];
  const shown = body.slice(scroll, scroll + height - 1);
  return h(
    Box,
    { flexDirection: 'column', height, overflow: 'hidden' },
    h(
      Text,
      { bold: true, wrap: 'truncate' },
      clip(
        `Volume ${volumeId}  (esc back, ↑↓ scroll ${Math.min(scroll + 1, body.length)}/${body.length})`,
        width,
      ),
    ),
    ...shown.map((l, i) => h(Text, { key: `${scroll + i}`, wrap: 'truncate' }, clip(l, width))),
  );
}
