import type { LabelledTopology, Topology } from '../../lib/specs/index.js';
import { notFound, SvcError } from './svc-error.js';

/** What the scheduler knows about a pool: spec labels plus the last state its io-engine reported. */
export interface PoolView {
  id: string;
  node: string;
  labels: Record<string, string>;
  online: boolean;
  /** False while its io-engine does not answer core (Registry.unanswering): tried last. */
  answering: boolean;
  capacity: number;
  used: number;
  /** Sum of the sizes of replicas placed on it (thin replicas count in full). */
  committed: number;
  replicaCount: number;
}

export interface NodeView {
  id: string;
  online: boolean;
  cordoned: boolean;
  labels: Record<string, string>;
}

export interface PlacementRequest {
  size: number;
  thin: boolean;
  count: number;
  topology: Topology | null;
  /** Nodes that already hold a replica of the volume (replicas spread one per node). */
  excludeNodes?: string[];
  /**
   * Nodes where a replica of the volume failed lately (self-heal removed it): tried last, with
   * unanswering ones, not excluded, so a cluster with no other room still heals there.
   */
  avoidNodes?: string[];
  /** Thin overcommit limit in percent of pool capacity (Mayastor --pool-commitment, 250). */
  poolCommitmentPercent?: number;
  /** A thin replica needs this much free space in percent of its size (--volume-commitment, 40). */
  volumeCommitmentPercent?: number;
  /**
   * Bytes a new thin replica takes at once: a replica added to a volume holding data is rebuilt
   * with all of it, which a pool with less free space cannot take (its writes would fail with
   * ENOSPC part-way, io-engine pool-space.ts).
   */
  allocated?: number;
}

const matchesLabels = (labels: Record<string, string>, l: LabelledTopology | undefined): boolean => {
  if (!l) return true;
  for (const [k, v] of Object.entries(l.inclusion ?? {}))
    if (labels[k] !== v && !(v === '' && k in labels)) return false;
  for (const [k, v] of Object.entries(l.exclusion ?? {}))
    if (k in labels && (v === '' || labels[k] === v)) return false;
  return true;
};

/** Why a pool cannot take a replica, or null when it can. */
export function rejectReason(
  pool: PoolView,
  node: NodeView | undefined,
  req: PlacementRequest,
): string | null {
  if (!node) return 'node unknown';
  if (!node.online) return 'node offline';
  if (node.cordoned) return 'node cordoned';
  if (req.excludeNodes?.includes(node.id)) return 'node already holds a replica';
  const nodeTopo = req.topology?.node;
  if (nodeTopo && 'Explicit' in nodeTopo) {
    const allowed = nodeTopo.Explicit.allowed_nodes ?? [];
    if (allowed.length > 0 && !allowed.includes(node.id)) return 'node not in allowed_nodes';
  } else if (nodeTopo && 'Labelled' in nodeTopo && !matchesLabels(node.labels, nodeTopo.Labelled)) {
    return 'node labels do not match the topology';
  }
  const poolTopo = req.topology?.pool;
  if (poolTopo && 'Labelled' in poolTopo && !matchesLabels(pool.labels, poolTopo.Labelled)) {
    return 'pool labels do not match the topology';
  }
  if (!pool.online) return 'pool not online';
  // Even thin: a replica larger than its pool could never be written in full (Mayastor's
  // PoolBaseFilters::capacity), and the io-engine refuses it.
  if (req.size > pool.capacity) return 'pool smaller than the replica';
  const free = pool.capacity - pool.used;
  if (req.thin) {
    const limit = (pool.capacity * (req.poolCommitmentPercent ?? 250)) / 100;
    if (pool.committed + req.size > limit) return 'thin commitment limit reached';
    const need = Math.max((req.size * (req.volumeCommitmentPercent ?? 40)) / 100, req.allocated ?? 0);
    if (free < need) return 'not enough free space';
  } else if (pool.capacity - pool.committed < req.size || free < req.size) {
    return 'not enough free space';
  }
  return null;
}

/**
 * Choose `count` pools for new replicas: at most one per node, only online uncordoned nodes and
 * online pools with room, honouring node and pool topology. Pools of unanswering and avoided nodes
 * last; then preferred nodes first, then the least loaded pool, then the most free space; ties
 * broken by id so the choice is deterministic.
 */
export function placeReplicas(pools: PoolView[], nodes: NodeView[], req: PlacementRequest): PoolView[] {
  const nodeById = new Map(nodes.map((n) => [n.id, n]));
  const reasons = new Map<string, number>();
  const eligible: PoolView[] = [];
  for (const p of pools) {
    const why = rejectReason(p, nodeById.get(p.node), req);
    if (why) reasons.set(why, (reasons.get(why) ?? 0) + 1);
    else eligible.push(p);
  }
  const nodeTopo = req.topology?.node;
  const preferred = nodeTopo && 'Explicit' in nodeTopo ? (nodeTopo.Explicit.preferred_nodes ?? []) : [];
  const avoid = new Set(req.avoidNodes);
  const last = (p: PoolView) => Number(!p.answering || avoid.has(p.node));
  eligible.sort(
    (a, b) =>
      last(a) - last(b) ||
      Number(preferred.includes(b.node)) - Number(preferred.includes(a.node)) ||
      a.replicaCount - b.replicaCount ||
      b.capacity - b.committed - (a.capacity - a.committed) ||
      a.id.localeCompare(b.id),
  );
  const chosen: PoolView[] = [];
  const usedNodes = new Set<string>();
  for (const p of eligible) {
    if (chosen.length === req.count) break;
    if (usedNodes.has(p.node)) continue;
    usedNodes.add(p.node);
    chosen.push(p);
  }
  if (chosen.length < req.count) {
    const why = [...reasons].map(([r, n]) => `${n} pool(s): ${r}`);
    // Every node with a pool that can take one got one: what is short is nodes, one replica each.
    if (eligible.length > 0)
      why.push(
        `the pools that can take one are on ${usedNodes.size} node(s), and replicas go on distinct nodes`,
      );
    throw new SvcError(
      'ResourceExhausted',
      `not enough suitable pools: need ${req.count} on distinct nodes, found ${chosen.length}${why.length ? ` (${why.join('; ')})` : ''}`,
      `NotEnoughResources: need ${req.count} replicas of ${req.size} bytes`,
    );
  }
  return chosen;
}

/** Node for a new nexus: the requested one, else an online node holding a replica, else any online node. */
export function chooseTargetNode(
  nodes: NodeView[],
  replicaNodes: string[],
  requested: string | undefined,
  avoid: string[] = [],
): string {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  if (requested) {
    const n = byId.get(requested);
    if (!n) throw notFound('node', requested);
    if (!n.online) throw new SvcError('FailedPrecondition', `node '${requested}' is not online`);
    return requested;
  }
  const usable = (id: string) => {
    const n = byId.get(id);
    return n?.online && !n.cordoned && !avoid.includes(id);
  };
  const local = [...replicaNodes].sort().find(usable);
  if (local) return local;
  const any = nodes
    .map((n) => n.id)
    .sort()
    .find(usable);
  if (!any) throw new SvcError('FailedPrecondition', 'no online, uncordoned node can host the volume target');
  return any;
}
