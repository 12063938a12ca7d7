import type { Listing } from '../../output/render.js';
import { type SwitchOverSpec, switchOverError, switchOverStageName } from '../../specs/index.js';
import { type ClusterState, specJson, specsOf, specText } from '../cluster.js';

export const SWITCHOVER_TYPES = ['SwitchOver'] as const;

export function switchOverListing(state: ClusterState): Listing<SwitchOverSpec> {
  return {
    rows: specsOf(state, 'SwitchOver'),
    columns: [
      { header: 'VOLUME', get: (s) => s.volume },
      { header: 'NODE', get: (s) => s.node_name },
      { header: 'STAGE', get: (s) => switchOverStageName(s) },
      { header: 'RESULT', get: (s) => s.operation?.result ?? null },
      { header: 'RETRIES', get: (s) => s.retry_count },
      { header: 'TIMESTAMP', get: (s) => s.timestamp },
      { header: 'NEW-PATH', get: (s) => s.new_path, wide: true },
      { header: 'CALLBACK', get: (s) => s.callback_uri, wide: true },
      { header: 'ERROR', get: (s) => switchOverError(s), wide: true },
    ],
    object: (s) => specJson('SwitchOver', s),
    json: (s) => specText(state, 'SwitchOver', s.volume, s),
  };
}
