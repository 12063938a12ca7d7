import { hasRecord } from '../catalog/cluster.js';
import { parseLiveness } from '../catalog/liveness.js';
import { readPrefix } from '../catalog/pages.js';
import { IoEngineClient, type Nexus, type Replica, type ReplicaSnapshot } from '../io-engine/client.js';
import type { VolumeSnapshot } from '../specs/index.js';
import { type KeySpace, nodeLivenessPrefix } from '../store/keys.js';
import type { Store } from '../store/types.js';
import type { StoreSnapshot } from './snapshot.js';
import type { FindNote, Orphan } from './types.js';

/** What one live io-engine holds right now. */
export interface EngineInventory {
  node: string;
  endpoint: string;
  replicas: Replica[];
  nexuses: Nexus[];
  snapshots: ReplicaSnapshot[];
}

/**
 * Ask every io-engine that heartbeats (its lease-bound liveness key is in the store) what replicas
 * and nexuses it holds. This runs before the store's specs are read: core records a spec before it
 * creates the resource on an io-engine, so a resource listed here whose spec is missing from the
 * later read really has none. An io-engine that does not answer is a note, not an error.
 */
export async function listEngines(
  store: Store,
  space: KeySpace,
  timeoutMs: number,
): Promise<{ engines: EngineInventory[]; notes: FindNote[] }> {
  const live: { node: string; endpoint: string }[] = [];
  for await (const kv of readPrefix(store, nodeLivenessPrefix(space))) {
    const l = parseLiveness(kv.value);
    if (l?.grpcEndpoint) live.push({ node: l.node, endpoint: l.grpcEndpoint });
  }
  const notes: FindNote[] = [];
  if (!live.length)
    notes.push({
      source: 'io-engines',
      message: 'none heartbeats now: replicas and nexuses held without a spec are not checked',
    });
  const engines: EngineInventory[] = [];
  await Promise.all(
    live.map(async ({ node, endpoint }) => {
      const client = new IoEngineClient(endpoint, { deadlineMs: timeoutMs });
      try {
        const [replicas, nexuses, snapshots] = await Promise.all([
          client.listReplicas(),
          client.listNexuses(),
          client.listReplicaSnapshots(),
        ]);
        engines.push({ node, endpoint, replicas, nexuses, snapshots });
      } catch (err) {
        notes.push({
          source: `io-engine ${node}`,
          message: `not asked what it holds (${endpoint}: ${(err as Error).message}); replicas and nexuses without a spec on it are not listed`,
        });
      } finally {
        client.close();
      }
    }),
  );
  engines.sort((a, b) => a.node.localeCompare(b.node));
  return { engines, notes };
}

/**
 * Why a replica snapshot an io-engine holds is a leftover, or null. Core names each one
 * `<volume snapshot>/<transaction>` and logs it in that VolumeSnapshot before taking it: one no
 * VolumeSnapshot records, while no attempt of its snapshot is in progress, was left by a storctl
 * that recorded only confirmed ones (an attempt its io-engine answered too late), or its record was
 * lost (a store restored from an earlier dump).
 */
export function engineSnapshotOrphanReason(
  s: ReplicaSnapshot,
  node: string,
  snapshotOf: (uuid: string) => VolumeSnapshot | 'undecodable' | undefined,
): string | null {
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/(\d+)$/.exec(s.name);
  if (!m) return null; // not one of core's: made by hand, left alone
  const owner = snapshotOf(m[1]);
  if (owner === 'undecodable' || owner?.metadata.operation) return null;
  const recorded = Object.values(owner?.metadata.transactions ?? {}).some((records) =>
    records.some((r) => r.spec.uuid === s.uuid),
  );
  if (recorded) return null;
  return owner
    ? `io-engine ${node} holds it (transaction ${m[2]} of snapshot ${m[1]}), but that snapshot does not record it: a failed attempt or a store restored from an earlier dump left it`
    : `io-engine ${node} holds it for snapshot ${m[1]}, which does not exist`;
}

/** Replicas and nexuses io-engines hold with no spec in the store (left by a crash, or made by hand). */
export function findEngineOrphans(engines: EngineInventory[], snap: StoreSnapshot): Orphan[] {
  const out: Orphan[] = [];
  for (const e of engines) {
    for (const r of e.replicas) {
      if (hasRecord(snap.cluster, 'ReplicaSpec', r.uuid)) continue;
      out.push({
        kind: 'engine-replica',
        id: r.uuid,
        volume: null,
        node: e.node,
        pool: r.pool,
        reason: `io-engine ${e.node} holds it in pool ${r.pool}, but there is no ReplicaSpec`,
        action: `DestroyReplica on io-engine ${e.node} (core cannot: it has no spec)`,
      });
    }
    for (const s of e.snapshots) {
      const reason = engineSnapshotOrphanReason(s, e.node, (id) => snapshotOf(snap, id));
      if (!reason) continue;
      out.push({
        kind: 'engine-snapshot',
        id: s.uuid,
        volume: null,
        node: e.node,
        pool: s.pool,
        reason,
        action: `DestroyReplicaSnapshot on io-engine ${e.node} (core cannot: no snapshot records it)`,
      });
    }
    for (const n of e.nexuses) {
      if (hasRecord(snap.cluster, 'NexusSpec', n.uuid)) continue;
      out.push({
        kind: 'engine-nexus',
        id: n.uuid,
        volume: n.volumeId || null,
        node: e.node,
        pool: null,
        reason: `io-engine ${e.node} runs it, but there is no NexusSpec`,
        action: `DestroyNexus on io-engine ${e.node} (core cannot: it has no spec)`,
      });
    }
  }
  return out;
}

/** The VolumeSnapshot of `id` in the store snapshot: 'undecodable' when its record does not decode. */
function snapshotOf(snap: StoreSnapshot, id: string): VolumeSnapshot | 'undecodable' | undefined {
  const found = snap.cluster.specs.VolumeSnapshot?.get(id);
  if (found) return found;
  return hasRecord(snap.cluster, 'VolumeSnapshot', id) ? 'undecodable' : undefined;
}
