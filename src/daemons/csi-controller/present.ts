import { TOPOLOGY_SELECTOR_KEY, TOPOLOGY_SELECTOR_VALUE } from '../../lib/csi/plugin.js';
import { snapshotSize } from '../../lib/rest/snapshot-size.js';
import type { Volume, VolumeSnapshot } from '../../lib/rest/types.js';

/** Core REST bodies → csi.v1 messages (plain objects for proto-loader). */

/** Every volume is reachable over NBD from every node that runs the csi-node. */
export const ACCESSIBLE_TOPOLOGY = [{ segments: { [TOPOLOGY_SELECTOR_KEY]: TOPOLOGY_SELECTOR_VALUE } }];

/** The snapshot fields of REST VolumeSnapshot this driver reads beyond lib/rest/types. */
type SnapshotBody = VolumeSnapshot & { state: { timestamp?: string } };

type VolumeBody = Volume & { spec: { content_source?: { snapshot?: { snapshot: string; volume: string } } } };

export function csiVolume(v: Volume, context: Record<string, string> = {}) {
  const source = (v as VolumeBody).spec.content_source?.snapshot;
  return {
    volume_id: v.spec.uuid,
    capacity_bytes: String(v.spec.size),
    volume_context: context,
    content_source: source ? { snapshot: { snapshot_id: source.snapshot } } : null,
    accessible_topology: ACCESSIBLE_TOPOLOGY,
  };
}

/** The CSI node ids a volume is published to (its target's frontend nodes). */
export function publishedNodes(v: Volume): string[] {
  return v.spec.target?.frontend_nodes?.map((f) => f.name) ?? [];
}

export function timestamp(iso: string | undefined): { seconds: string; nanos: number } {
  const ms = iso ? Date.parse(iso) : Number.NaN;
  const t = Number.isNaN(ms) ? 0 : ms;
  return { seconds: String(Math.floor(t / 1000)), nanos: (t % 1000) * 1_000_000 };
}

export function csiSnapshot(s: VolumeSnapshot) {
  const b = s as SnapshotBody;
  return {
    snapshot_id: s.definition.spec.uuid,
    source_volume_id: s.definition.spec.source_volume,
    size_bytes: String(snapshotSize(s)),
    creation_time: timestamp(b.definition.metadata.timestamp ?? b.state.timestamp),
    ready_to_use: s.definition.metadata.status === 'Created',
    group_snapshot_id: '',
  };
}
