import type { DecodeError } from '../errors.js';
import type { KeySpace } from '../store/keys.js';
import type { Store } from '../store/types.js';
import { findCsiNodeOrphans } from './csi-node.js';
import { type CsiNodeState, readCsiNodeState } from './csi-node-state.js';
import { type EngineInventory, findEngineOrphans, listEngines } from './engines.js';
import { KubeClient } from './kube/client.js';
import type { KubeAccess } from './kube/config.js';
import { findNexusInfoOrphans } from './nexus-info.js';
import { findNexusOrphans } from './nexuses.js';
import { findReplicaOrphans } from './replicas.js';
import { readSnapshot, type StoreSnapshot } from './snapshot.js';
import { findSwitchOverOrphans } from './switchovers.js';
import { type FindNote, type FindResult, type OrphanKind, orphanKinds } from './types.js';
import { type ClaimIndex, findVolumesWithoutClaims, indexClaims } from './volumes-without-claims.js';

export interface FindOptions {
  store: Store;
  space: KeySpace;
  /** Deadline of each io-engine's listing. */
  engineTimeoutMs: number;
  /** A finished switchover older than this is stale. */
  switchoverGraceMs: number;
  /** csi-node's state directory, when one is to be checked. */
  csiNodeStateDir: string | null;
  /** This node's id as csi-node knows it (optional: "published to another node" needs it). */
  nodeId?: string;
  /** Kubernetes API, when configured. */
  kube: KubeAccess | null;
}

export interface Findings extends FindResult {
  snapshot: StoreSnapshot;
  engines: EngineInventory[];
  csiNode: CsiNodeState | null;
  /** Stored values that did not decode (reported after the listing, exit 8). */
  decodeErrors: DecodeError[];
}

/**
 * Find every orphan. Sources are read in the order that keeps the checks safe: io-engines and the
 * csi-node state (what exists) before the store (what owns it), Kubernetes last (a PVC exists
 * before its volume is created, so a volume read from the store has its claim visible afterwards).
 */
export async function findOrphans(opts: FindOptions): Promise<Findings> {
  const notes: FindNote[] = [];
  const { engines, notes: engineNotes } = await listEngines(opts.store, opts.space, opts.engineTimeoutMs);
  notes.push(...engineNotes);
  const csiNode = opts.csiNodeStateDir ? await readCsiNodeState(opts.csiNodeStateDir) : null;
  if (!csiNode)
    notes.push({
      source: 'csi-node',
      message: `no state file${opts.csiNodeStateDir ? ` in ${opts.csiNodeStateDir}` : ''} (--csi-node-state): csi-node leftovers are not checked`,
    });
  const snapshot = await readSnapshot(opts.store, opts.space);
  const claims = opts.kube ? await readClaims(opts.kube) : null;
  const orphans = [
    ...findReplicaOrphans(snapshot),
    ...findEngineOrphans(engines, snapshot),
    ...findNexusOrphans(snapshot),
    ...findNexusInfoOrphans(snapshot),
    ...findSwitchOverOrphans(snapshot, opts.switchoverGraceMs),
    ...findCsiNodeOrphans(csiNode, snapshot, opts.nodeId),
    ...findVolumesWithoutClaims(claims, snapshot),
  ];
  const rank = (k: OrphanKind) => orphanKinds.indexOf(k);
  orphans.sort((a, b) => rank(a.kind) - rank(b.kind) || a.id.localeCompare(b.id));
  return { orphans, notes, snapshot, engines, csiNode, decodeErrors: snapshot.cluster.errors };
}

/** Every PV and PVC the API server lists, indexed for the orphan check. */
export async function readClaims(access: KubeAccess): Promise<ClaimIndex> {
  const client = new KubeClient(access);
  try {
    const [pvs, pvcs] = await Promise.all([
      client.listPersistentVolumes(),
      client.listPersistentVolumeClaims(),
    ]);
    return indexClaims(pvs, pvcs, access.source);
  } finally {
    await client.close();
  }
}

/** Orphans counted by kind, in the order kinds are listed: "2 replica, 1 nexus-info". */
export function countByKind(result: FindResult): string {
  const counts = new Map<OrphanKind, number>();
  for (const o of result.orphans) counts.set(o.kind, (counts.get(o.kind) ?? 0) + 1);
  return orphanKinds
    .filter((k) => counts.has(k))
    .map((k) => `${counts.get(k)} ${k}`)
    .join(', ');
}
