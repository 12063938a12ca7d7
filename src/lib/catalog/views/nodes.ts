import type { Listing } from '../../output/render.js';
import { nodeOut } from '../../rest/present.js';
import {
  cordonLabels,
  drainLabels,
  drainStateText,
  type NodeSpec,
  nodeStatusText,
} from '../../specs/index.js';
import { type ClusterState, specsOf } from '../cluster.js';
import type { NodeLiveness } from '../liveness.js';
import { labelsText } from './volumes.js';

export const NODE_TYPES = ['NodeSpec', 'NodeLiveness'] as const;

interface NodeRow {
  spec: NodeSpec;
  live: NodeLiveness | undefined;
}

/** Online while the node's lease-bound liveness key exists; Offline once its lease expired. */
export function nodeListing(state: ClusterState, filter?: (n: NodeSpec) => boolean): Listing<NodeRow> {
  const rows = specsOf(state, 'NodeSpec')
    .filter((n) => !filter || filter(n))
    .map((spec) => ({ spec, live: state.liveness.get(spec.id) }));
  return {
    rows,
    columns: [
      { header: 'ID', get: (r) => r.spec.id },
      { header: 'GRPC ENDPOINT', get: (r) => r.spec.endpoint },
      { header: 'STATUS', get: (r) => nodeStatusText(r.spec, r.live ? 'Online' : 'Offline') },
      { header: 'VERSION', get: (r) => r.spec.version ?? r.live?.version },
      { header: 'NBD ENDPOINT', get: (r) => r.live?.nbdEndpoint, wide: true },
      { header: 'CORDON LABELS', get: (r) => cordonLabels(r.spec).join(',') || null, wide: true },
      { header: 'DRAIN STATE', get: (r) => drainStateText(r.spec), wide: true },
      // The label `node uncordon --label` takes to cancel the drain.
      { header: 'DRAIN LABELS', get: (r) => drainLabels(r.spec).join(',') || null, wide: true },
      { header: 'LABELS', get: (r) => labelsText(r.spec.labels), wide: true },
    ],
    // REST's node, whose state (liveness) the store holds: the same object core answers.
    object: (r) =>
      nodeOut(
        r.spec.id,
        r.spec,
        r.live && {
          online: true,
          grpcEndpoint: r.live.grpcEndpoint ?? null,
          nbdEndpoint: r.live.nbdEndpoint ?? null,
        },
      ),
  };
}
