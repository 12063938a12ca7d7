import {
  currentReplicaSnapshots,
  isCordoned,
  type NodeSpec,
  operationName,
  type PoolSpec,
  specStatusName,
  type VolumeSnapshot,
  type VolumeSpec,
} from '../specs/index.js';

/**
 * The stored specs as REST v0 shows them (docs/mayastor-compat.md §2.1–2.2): the `spec` half of a
 * volume or pool, and a node whole. Core adds its live state to them; `storctl get` prints them as
 * they are when core does not answer, so `-o json` of a resource has one shape whichever command
 * printed it.
 */

const op = (o: { operation: string | object; result: boolean | null } | null | undefined) =>
  o ? { operation: operationName(o.operation), result: o.result ?? undefined } : undefined;

function topologyOut(t: VolumeSpec['topology']) {
  if (!t) return undefined;
  const out: Record<string, unknown> = {};
  if (t.node && 'Explicit' in t.node) out.node_topology = { explicit: t.node.Explicit };
  else if (t.node && 'Labelled' in t.node)
    out.node_topology = {
      labelled: {
        inclusion: t.node.Labelled.inclusion ?? {},
        exclusion: t.node.Labelled.exclusion ?? {},
        affinitykey: t.node.Labelled.creation_affinity_keys ?? [],
      },
    };
  if (t.pool && 'Labelled' in t.pool)
    out.pool_topology = {
      labelled: {
        inclusion: t.pool.Labelled.inclusion ?? {},
        exclusion: t.pool.Labelled.exclusion ?? {},
        affinitykey: t.pool.Labelled.creation_affinity_keys ?? [],
      },
    };
  return out;
}

/** REST `VolumeSpec`; `numSnapshots` counts the snapshots whose source is this volume. */
export function volumeSpecOut(v: VolumeSpec, numSnapshots: number) {
  const target = v.target && v.target.active !== false ? v.target : undefined;
  return {
    uuid: v.uuid,
    size: v.size,
    labels: v.labels ?? undefined,
    num_replicas: v.num_replicas,
    status: specStatusName(v.status),
    operation: op(v.operation),
    target: target
      ? {
          node: target.node,
          protocol: target.protocol ?? undefined,
          frontend_nodes: target.frontend?.host_acl.map((h) => ({ name: h.node_name, nqn: h.node_nqn })),
        }
      : undefined,
    policy: v.policy,
    topology: topologyOut(v.topology),
    thin: v.thin,
    as_thin: v.thin || undefined,
    affinity_group: v.affinity_group ?? undefined,
    content_source: v.content_source
      ? { snapshot: { snapshot: v.content_source.Snapshot[0], volume: v.content_source.Snapshot[1] } }
      : undefined,
    num_snapshots: numSnapshots,
    max_snapshots: v.max_snapshots,
  };
}

/** A volume as REST shows it, from the store alone: its spec (the state is what core observes). */
export const storedVolume = (v: VolumeSpec, numSnapshots: number) => ({
  spec: volumeSpecOut(v, numSnapshots),
});

/** REST `PoolSpec`. */
export function poolSpecOut(p: PoolSpec) {
  return {
    id: p.id,
    node: p.node,
    disks: p.disks,
    labels: p.labels ?? undefined,
    status: specStatusName(p.status),
  };
}

/** REST `VolumeSnapshotMetadata.transactions`: each attempt's replica snapshots as REST `ReplicaSnapshot`. */
function transactionsOut(s: VolumeSnapshot) {
  return Object.fromEntries(
    Object.entries(s.metadata.transactions).map(([txn, records]) => [
      txn,
      records.map((r) => ({
        uuid: r.spec.uuid,
        source_id: r.spec.source_id.replica_id,
        status: specStatusName(r.status),
      })),
    ]),
  );
}

/** REST `VolumeSnapshotDefinition`; `numRestores` counts the volumes created from this snapshot. */
export function snapshotDefinitionOut(s: VolumeSnapshot, numRestores: number) {
  return {
    spec: { uuid: s.spec.uuid, source_volume: s.spec.source_id },
    metadata: {
      status: specStatusName(s.status),
      timestamp: s.metadata.timestamp ?? undefined,
      size: s.metadata.size,
      spec_size: s.metadata.spec_size,
      total_allocated_size: s.metadata.total_allocated_size,
      txn_id: s.metadata.txn_id,
      transactions: transactionsOut(s),
      num_restores: numRestores,
      num_snapshot_replicas: currentReplicaSnapshots(s).length,
    },
  };
}

/** What is known of a node's io-engine beyond its spec: its liveness record, while it has one. */
export interface NodeLivenessView {
  online: boolean;
  grpcEndpoint: string | null;
  nbdEndpoint: string | null;
}

/**
 * REST `Node`. Its state is the node's liveness (Online while its lease-bound key exists), which
 * the store holds, so a node reads the same from core and from `get` with core down.
 */
export function nodeOut(id: string, spec: NodeSpec | undefined, live: NodeLivenessView | undefined) {
  const cds = spec?.cordon_drain_state;
  return {
    id,
    spec: spec
      ? {
          id,
          grpcEndpoint: spec.endpoint,
          labels: spec.labels ?? {},
          cordondrainstate: cds
            ? 'Cordoned' in cds
              ? { cordonedstate: cds.Cordoned }
              : 'Draining' in cds
                ? { drainingstate: cds.Draining }
                : { drainedstate: cds.Drained }
            : undefined,
          node_nqn: spec.node_nqn,
          version: spec.version,
        }
      : undefined,
    state: {
      id,
      grpcEndpoint: live?.grpcEndpoint ?? spec?.endpoint ?? '',
      nbdEndpoint: live?.nbdEndpoint ?? undefined,
      status: live?.online ? 'Online' : live || spec ? 'Offline' : 'Unknown',
      cordoned: spec ? isCordoned(spec) : false,
    },
  };
}
