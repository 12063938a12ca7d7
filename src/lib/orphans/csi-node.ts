import { hasRecord } from '../catalog/cluster.js';
import { activeTarget, isSwitchOverDone, type VolumeSpec } from '../specs/index.js';
import type { CsiNodeState, CsiNodeVolume } from './csi-node-state.js';
import type { StoreSnapshot } from './snapshot.js';
import type { Orphan } from './types.js';

/** The paths, devices and processes one csi-node entry consists of (what --delete undoes). */
export function entryParts(v: CsiNodeVolume): string[] {
  const parts: string[] = [];
  for (const target of Object.keys(v.publishes ?? {})) parts.push(`published at ${target}`);
  if (v.stagingPath) parts.push(`staged at ${v.stagingPath}`);
  if (v.device) parts.push(`device ${v.device.device} (${v.device.kind})`);
  if (v.proxy) parts.push(`proxy pid ${v.proxy.pid}${v.proxy.socketPath ? ` at ${v.proxy.socketPath}` : ''}`);
  if (v.dir) parts.push(`directory ${v.dir}`);
  return parts;
}

/**
 * Why csi-node's entry of `volumeId` is a leftover, or null when it is not: the volume no longer
 * exists, has no active target, or (with `nodeId`) is published to other nodes only. Not while a
 * switchover moves the volume's target (`moving`), nor when its VolumeSpec does not decode (a
 * volume still there). `spec`: the volume's, undefined when there is none.
 */
export function csiNodeOrphanReason(
  stateFile: string,
  volumeId: string,
  spec: VolumeSpec | 'undecodable' | undefined,
  moving: boolean,
  nodeId: string | undefined,
): string | null {
  if (moving || spec === 'undecodable') return null;
  const has = `csi-node (${stateFile}) still has volume ${volumeId}`;
  if (!spec) return `${has}, which does not exist`;
  if (!activeTarget(spec)) return `${has}, which is not published`;
  const acl = spec.target?.frontend?.host_acl ?? [];
  if (nodeId && acl.length && !acl.some((a) => a.node_name === nodeId))
    return `${has}, which is published to ${acl.map((a) => a.node_name).join(', ')}, not to ${nodeId}`;
  return null;
}

/** The csi-node entries of `state` that are leftovers (csiNodeOrphanReason). */
export function findCsiNodeOrphans(
  state: CsiNodeState | null,
  snap: StoreSnapshot,
  nodeId: string | undefined,
): Orphan[] {
  if (!state) return [];
  const volumes = snap.cluster.specs.VolumeSpec ?? new Map<string, VolumeSpec>();
  // Mid-switchover a volume has no active target for a moment: HA is moving it, not leaving it.
  const moving = new Set(
    snap.switchovers.filter((r) => !isSwitchOverDone(r.value)).map((r) => r.value.volume),
  );
  const out: Orphan[] = [];
  for (const v of [...state.volumes].sort((a, b) => a.volumeId.localeCompare(b.volumeId))) {
    const spec =
      volumes.get(v.volumeId) ??
      (hasRecord(snap.cluster, 'VolumeSpec', v.volumeId) ? ('undecodable' as const) : undefined);
    const reason = csiNodeOrphanReason(state.file, v.volumeId, spec, moving.has(v.volumeId), nodeId);
    if (!reason) continue;
    const undo =
      'unmount and remove its paths below the csi-node roots, stop its proxy, drop the state entry';
    out.push({
      kind: 'csi-node-volume',
      id: v.volumeId,
      volume: v.volumeId,
      node: nodeId ?? null,
      pool: null,
      reason,
      // A volume that still exists may still be a pod's: publishing it again brings its path back.
      action:
        spec && spec !== 'undecodable'
          ? `${undo}; if a pod still uses it, publish the volume again instead (\`storctl volume publish ${v.volumeId}\`): HA, or a repeated NodeStageVolume, re-points its path`
          : undo,
      paths: entryParts(v),
    });
  }
  return out;
}
