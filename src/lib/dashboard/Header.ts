import { Text } from 'ink';
import { createElement as h } from 'react';
import { clip } from './layout.js';
import type { Snapshot } from './model.js';
import type { Theme } from './theme.js';

/** One line: where the data comes from and the cluster at a glance. */
export function Header({
  snapshot: s,
  source,
  width,
  theme,
}: {
  snapshot: Snapshot;
  source: string;
  width: number;
  theme: Theme;
}) {
  const nodes = s.state.specs.NodeSpec?.size ?? 0;
  const online = [...(s.state.specs.NodeSpec?.keys() ?? [])].filter((n) => s.state.liveness.has(n)).length;
  const volumes = s.state.specs.VolumeSpec?.size ?? 0;
  const core = s.live ? 'core live' : 'store only';
  const undecodable = s.state.errors.length
    ? `  ${s.state.errors.length} undecodable (storctl get shows them)`
    : '';
  const problems = `${undecodable}${s.watchError ? `  WATCH: ${s.watchError}` : ''}`;
  const text = `storctl dashboard  nodes ${online}/${nodes} online  pools ${s.state.specs.PoolSpec?.size ?? 0}  volumes ${volumes}  ${core}  ${source}${problems}`;
  return h(
    Text,
    { bold: true, color: problems ? theme.tone('bad') : theme.accent, wrap: 'truncate' },
    clip(text, width),
  );
}
