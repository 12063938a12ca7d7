import { describe, expect, it } from 'vitest';
import {
  chooseTargetNode,
  type NodeView,
  type PoolView,
  placeReplicas,
} from '../../../src/daemons/core/scheduler.js';
import { SvcError } from '../../../src/daemons/core/svc-error.js';

const GiB = 2 ** 30;
const node = (id: string, o: Partial<NodeView> = {}): NodeView => ({
  id,
  online: true,
  cordoned: false,
  labels: {},
  ...o,
});
const pool = (id: string, nodeId: string, o: Partial<PoolView> = {}): PoolView => ({
  id,
  node: nodeId,
  labels: {},
  online: true,
  answering: true,
  capacity: 10 * GiB,
  used: 0,
  committed: 0,
  replicaCount: 0,
  ...o,
});
const nodes = [node('n1'), node('n2'), node('n3')];
const pools = [pool('p1', 'n1'), pool('p2', 'n2'), pool('p3', 'n3')];
const req = { size: GiB, thin: false, count: 3, topology: null };

describe('replica placement', () => {
  it('spreads replicas one per node', () => {
    const twoOnN1 = [...pools, pool('p1b', 'n1', { replicaCount: -1 })];
    const chosen = placeReplicas(twoOnN1, nodes, req);
    expect(new Set(chosen.map((p) => p.node)).size).toBe(3);
  });

  it('tries pools whose io-engine does not answer core last, even on a preferred node', () => {
    const silent = [
      pool('p1', 'n1', { answering: false }),
      pool('p2', 'n2'),
      pool('p3', 'n3', { capacity: GiB }),
    ];
    const prefersN1 = { node: { Explicit: { allowed_nodes: [], preferred_nodes: ['n1'] } }, pool: null };
    expect(placeReplicas(silent, nodes, { ...req, count: 2, topology: prefersN1 }).map((p) => p.id)).toEqual([
      'p2',
      'p3',
    ]);
    // Still placed there when nothing else can take the replica.
    expect(placeReplicas(silent, nodes, req).map((p) => p.id)).toEqual(['p2', 'p3', 'p1']);
  });

  it('tries the nodes a replica of the volume failed on last, not excluded', () => {
    // p1 would come first (most room); a replica of this volume failed on n1 lately.
    const roomy = [pool('p1', 'n1', { capacity: 20 * GiB }), pool('p2', 'n2'), pool('p3', 'n3')];
    expect(placeReplicas(roomy, nodes, { ...req, count: 1 }).map((p) => p.id)).toEqual(['p1']);
    expect(placeReplicas(roomy, nodes, { ...req, count: 1, avoidNodes: ['n1'] }).map((p) => p.id)).toEqual([
      'p2',
    ]);
    expect(placeReplicas(roomy, nodes, { ...req, avoidNodes: ['n1'] }).map((p) => p.id)).toEqual([
      'p2',
      'p3',
      'p1',
    ]);
  });

  it('skips offline and cordoned nodes and says why when it cannot place', () => {
    const ns = [node('n1'), node('n2', { online: false }), node('n3', { cordoned: true })];
    expect(placeReplicas(pools, ns, { ...req, count: 1 }).map((p) => p.id)).toEqual(['p1']);
    const err = (() => {
      try {
        placeReplicas(pools, ns, req);
      } catch (e) {
        return e as SvcError;
      }
    })()!;
    expect(err).toBeInstanceOf(SvcError);
    expect(err.kind).toBe('ResourceExhausted');
    expect(err.status).toBe(507);
    expect(err.message).toMatch(/node offline/);
    expect(err.message).toMatch(/node cordoned/);
  });

  it('says when what is short is nodes: more replicas than nodes with room', () => {
    const fourOnThree = [...pools, pool('p1b', 'n1')];
    expect(() => placeReplicas(fourOnThree, nodes, { ...req, count: 4 })).toThrow(
      'not enough suitable pools: need 4 on distinct nodes, found 3 (the pools that can take one are on 3 node(s), and replicas go on distinct nodes)',
    );
    const full = pool('p3', 'n3', { used: 9.5 * GiB });
    expect(() => placeReplicas([pools[0], pools[1], full], nodes, req)).toThrow(
      'found 2 (1 pool(s): not enough free space; the pools that can take one are on 2 node(s), and replicas go on distinct nodes)',
    );
    expect(() => placeReplicas([full], nodes, { ...req, count: 1 })).toThrow(
      /found 0 \(1 pool\(s\): not enough free space\)$/,
    );
  });

  it('excludes nodes that already hold a replica of the volume', () => {
    const chosen = placeReplicas(pools, nodes, { ...req, count: 1, excludeNodes: ['n1', 'n2'] });
    expect(chosen.map((p) => p.node)).toEqual(['n3']);
  });

  it('honours pool label topology and node label topology', () => {
    const labelled = [
      pool('p1', 'n1', { labels: { class: 'ssd' } }),
      pool('p2', 'n2'),
      pool('p3', 'n3', { labels: { class: 'ssd' } }),
    ];
    const chosen = placeReplicas(labelled, nodes, {
      ...req,
      count: 2,
      topology: {
        node: null,
        pool: { Labelled: { inclusion: { class: 'ssd' }, exclusion: {}, creation_affinity_keys: null } },
      },
    });
    expect(chosen.map((p) => p.id).sort()).toEqual(['p1', 'p3']);
    const zoned = [
      node('n1', { labels: { zone: 'a' } }),
      node('n2', { labels: { zone: 'b' } }),
      node('n3', { labels: { zone: 'a' } }),
    ];
    const byZone = placeReplicas(pools, zoned, {
      ...req,
      count: 2,
      topology: {
        node: { Labelled: { inclusion: { zone: 'a' }, exclusion: {}, creation_affinity_keys: null } },
        pool: null,
      },
    });
    expect(byZone.map((p) => p.node).sort()).toEqual(['n1', 'n3']);
    const explicit = placeReplicas(pools, nodes, {
      ...req,
      count: 1,
      topology: { node: { Explicit: { allowed_nodes: ['n2', 'n3'], preferred_nodes: ['n3'] } }, pool: null },
    });
    expect(explicit.map((p) => p.node)).toEqual(['n3']);
  });

  it('applies thick capacity and thin overcommit limits', () => {
    const full = [pool('p1', 'n1', { committed: 9.5 * GiB }), pool('p2', 'n2'), pool('p3', 'n3')];
    expect(() => placeReplicas(full, nodes, req)).toThrow(/not enough free space/);
    // Thin: up to 250% of capacity committed, and 40% of the size free.
    const thin = { ...req, thin: true, count: 1 };
    expect(placeReplicas([pool('p1', 'n1', { committed: 24 * GiB })], nodes, thin)).toHaveLength(1);
    expect(() => placeReplicas([pool('p1', 'n1', { committed: 24.5 * GiB })], nodes, thin)).toThrow(
      /commitment limit/,
    );
    expect(() => placeReplicas([pool('p1', 'n1', { used: 9.7 * GiB })], nodes, thin)).toThrow(
      /not enough free space/,
    );
    // Not even thin: a replica larger than its pool (the io-engine would refuse it).
    const big = { ...thin, size: 12 * GiB };
    expect(() => placeReplicas([pool('p1', 'n1')], nodes, big)).toThrow(/pool smaller than the replica/);
    expect(placeReplicas([pool('p1', 'n1'), pool('p2', 'n2', { capacity: 12 * GiB })], nodes, big)).toEqual([
      expect.objectContaining({ id: 'p2' }),
    ]);
  });

  it('prefers the least loaded pool, deterministically', () => {
    const loaded = [
      pool('p1', 'n1', { replicaCount: 5 }),
      pool('p2', 'n2', { replicaCount: 1 }),
      pool('p3', 'n3', { replicaCount: 1 }),
    ];
    expect(placeReplicas(loaded, nodes, { ...req, count: 2 }).map((p) => p.id)).toEqual(['p2', 'p3']);
  });
});

describe('target node choice', () => {
  it('uses the requested node, else a node with a replica, else any online node', () => {
    expect(chooseTargetNode(nodes, ['n2'], 'n3')).toBe('n3');
    expect(chooseTargetNode(nodes, ['n2', 'n3'], undefined)).toBe('n2');
    expect(chooseTargetNode([node('n1'), node('n2', { online: false })], ['n2'], undefined)).toBe('n1');
    expect(() => chooseTargetNode(nodes, [], 'nx')).toThrow(/not found/);
    expect(() => chooseTargetNode([node('n1', { online: false })], [], 'n1')).toThrow(/not online/);
  });
});
