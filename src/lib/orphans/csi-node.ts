import { hasRecord } from '../catalog/cluster.js';
import type { VolumeSpec } from '../specs/index.js';
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
 * Volumes csi-node still has staged or published on this node though the volume no longer exists,
 * has no active target, or (with `nodeId`) is published to other nodes only.
 */
export function findCsiNodeOrphans(
  state: CsiNodeState | null,
  snap: StoreSnapshot,
  nodeId: string | undefined,
): Orphan[] {
  if (!state) return [];
  const volumes = snap.cluster.specs.VolumeSpec ?? new Map<string, VolumeSpec>();
  const out: Orphan[] = [];
  for (const v of [...state.volumes].sort((a, b) => a.volumeId.localeCompare(b.volumeId))) {
    const spec = volumes.get(v.volumeId);
    let reason: string | null = null;
    if (!spec) {
      // An undecodable VolumeSpec is a volume still there: its staging is not a leftover.
      if (hasRecord(snap.cluster, 'VolumeSpec', v.volumeId)) continue;
      reason = `csi-node (${state.file}) still has volume ${v.volumeId}, which does not exist`;
    } else if (!spec.target || spec.target.active === false)
      reason = `csi-node (${state.file}) still has volume ${v.volumeId}, which is not published`;
    else if (nodeId) {
      const acl = spec.target.frontend?.host_acl ?? [];
      if (acl.length && !acl.some((a) => a.node_name === nodeId))
        reason = `csi-node (${state.file}) still has volume ${v.volumeId}, which is published to ${acl.map((a) => a.node_name).join(', ')}, not to ${nodeId}`;
    }
    if (!reason) continue;
    out.push({
      kind: 'csi-node-volume',
      id: v.volumeId,
      volume: v.volumeId,
      node: nodeId ?? null,
      pool: null,
      reason,
      action: 'unmount and remove its paths below the csi-node roots, stop its proxy, drop the state entry',
      paths: entryParts(v),
    });
  }
  return out;
}
