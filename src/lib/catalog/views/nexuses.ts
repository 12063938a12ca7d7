import { humanizeBytes } from '../../output/humanize.js';
import type { Listing } from '../../output/render.js';
import { childUri, createdState, type NexusSpec, specStatusName, variantName } from '../../specs/index.js';
import { type ClusterState, specJson, specsOf } from '../cluster.js';

export const NEXUS_TYPES = ['NexusSpec'] as const;

export function nexusListing(state: ClusterState): Listing<NexusSpec> {
  return {
    rows: specsOf(state, 'NexusSpec'),
    columns: [
      { header: 'ID', get: (n) => n.uuid },
      { header: 'VOLUME', get: (n) => n.owner },
      { header: 'NODE', get: (n) => n.node },
      { header: 'SIZE', get: (n) => humanizeBytes(n.size) },
      { header: 'CHILDREN', get: (n) => n.children.length },
      { header: 'SHARE', get: (n) => n.share },
      { header: 'STATUS', get: (n) => createdState(n.spec_status) ?? specStatusName(n.spec_status) },
      { header: 'TARGET', get: (n) => state.live?.nexuses.get(n.uuid), wide: true },
      { header: 'CHILD URIS', get: (n) => n.children.map(childUri).join(', '), wide: true },
      {
        header: 'OPERATION',
        get: (n) => (n.operation ? variantName(n.operation.operation as string | object) : null),
        wide: true,
      },
    ],
    object: (n) => specJson('NexusSpec', n),
  };
}
