import type { Listing } from '../../output/render.js';
import { type SwitchOverSpec, switchOverError, switchOverStageName } from '../../specs/index.js';
import { type ClusterState, specJson, specsOf } from '../cluster.js';

export const SWITCHOVER_TYPES = ['SwitchOver'] as const;

export function switchOverListing(state: ClusterState): Listing<SwitchOverSpec> {
  return {
    rows: specsOf(state, 'SwitchOver'),
    columns: [
      { header: 'VOLUME', get: (s) => s.volume },
      { header: 'STAGE', get: (s) => switchOverStageName(s) },
      { header: 'RETRIES', get: (s) => s.retry_count },
      { header: 'AGE', get: (s) => age(s.timestamp) },
      { header: 'FROM', get: (s) => s.existing_nqn },
      { header: 'TO', get: (s) => s.new_path ?? s.target_node ?? null },
      { header: 'REASON', get: (s) => switchOverError(s) },
      { header: 'FRONTEND-NODE', get: (s) => s.node_name, wide: true },
      { header: 'CALLBACK', get: (s) => s.callback_uri, wide: true },
      { header: 'TIMESTAMP', get: (s) => s.timestamp, wide: true },
    ],
    object: (s) => specJson('SwitchOver', s),
  };
}

/** Time since the record last changed, as kubectl prints ages (45s, 3m, 2h, 4d); null when unreadable. */
function age(timestamp: string, now = Date.now()): string | null {
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return null;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}
