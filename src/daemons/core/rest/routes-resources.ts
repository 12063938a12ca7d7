import { nodeOut } from '../../../lib/rest/present.js';
import { poolRefName } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { labelPool, unlabelPool } from '../ops/pool-label.js';
import {
  cordonNode,
  createPool,
  deletePool,
  drainNode,
  labelNode,
  uncordonNode,
  unlabelNode,
} from '../ops/pool-node.js';
import { notFound } from '../svc-error.js';
import { nexusOut, poolOut, replicaOut } from './present.js';
import { specsOut } from './present-schema.js';
import type { Router } from './router.js';
import { appNodeRoutes } from './routes-app-nodes.js';
import { nexusRoutes } from './routes-nexuses.js';
import { replicaRoutes } from './routes-replicas.js';
import { createPoolBody, labelParam, nameParam, uuidParam } from './validate.js';
import { boolQuery } from './validate-resources.js';

/** Pools, nodes, replicas, nexuses, block devices, app nodes and /specs (docs/mayastor-compat.md §2.2). */
export function resourceRoutes(router: Router, ctx: CoreContext): void {
  replicaRoutes(router, ctx);
  nexusRoutes(router, ctx);
  appNodeRoutes(router, ctx);
  const reg = ctx.registry;
  const allNodeIds = () => [...new Set([...reg.nodes.keys(), ...reg.nodeLive.keys()])].sort();
  const node = (id: string) => {
    if (!reg.nodes.has(id) && !reg.nodeLive.has(id)) throw notFound('node', id);
    return nodeOut(id, reg.nodes.get(id), reg.nodeLive.get(id));
  };
  const pool = (id: string, nodeId?: string) => {
    const p = reg.pools.get(id);
    if (!p || (nodeId && p.node !== nodeId)) throw notFound('pool', id, 'Pool');
    return p;
  };
  router
    .add('GET', '/nodes', async (req) => {
      const only = req.query.get('node_id');
      return {
        status: 200,
        body: allNodeIds()
          .filter((id) => !only || id === only)
          .map(node),
      };
    })
    .add('GET', '/nodes/:node_id', async (req) => ({ status: 200, body: node(req.params.node_id) }))
    .add('PUT', '/nodes/:node_id/cordon/:label', async (req) => {
      await cordonNode(ctx, nameParam(req.params.node_id, 'node_id'), labelParam(req.params.label, 'label'));
      return { status: 200, body: node(req.params.node_id) };
    })
    .add('DELETE', '/nodes/:node_id/cordon/:label', async (req) => {
      await uncordonNode(
        ctx,
        nameParam(req.params.node_id, 'node_id'),
        labelParam(req.params.label, 'label'),
      );
      return { status: 200, body: node(req.params.node_id) };
    })
    .add('PUT', '/nodes/:node_id/drain/:label', async (req) => {
      await drainNode(ctx, nameParam(req.params.node_id, 'node_id'), labelParam(req.params.label, 'label'));
      return { status: 200, body: node(req.params.node_id) };
    })
    .add('PUT', '/nodes/:node_id/label/:key=:value', async (req) => {
      await labelNode(
        ctx,
        nameParam(req.params.node_id, 'node_id'),
        labelParam(req.params.key, 'key', { key: true }),
        labelParam(req.params.value, 'value'),
        boolQuery(req.query, 'overwrite'),
      );
      return { status: 200, body: node(req.params.node_id) };
    })
    .add('DELETE', '/nodes/:node_id/label/:key', async (req) => {
      await unlabelNode(
        ctx,
        nameParam(req.params.node_id, 'node_id'),
        labelParam(req.params.key, 'key', { key: true }),
      );
      return { status: 200, body: node(req.params.node_id) };
    })
    .add('GET', '/pools', async (req) => {
      const vol = req.query.get('volume_id');
      const used = vol ? new Set(reg.volumeReplicas(vol).map((r) => poolRefName(r.pool))) : null;
      return {
        status: 200,
        body: [...reg.pools.values()].filter((p) => !used || used.has(p.id)).map((p) => poolOut(reg, p)),
      };
    })
    .add('GET', '/pools/:pool_id', async (req) => ({
      status: 200,
      body: poolOut(reg, pool(req.params.pool_id)),
    }))
    .add('DELETE', '/pools/:pool_id', async (req) => {
      await deletePool(ctx, req.params.pool_id);
      return { status: 204 };
    })
    .add('PUT', '/pools/:pool_id/label/:key=:value', async (req) => {
      const p = await labelPool(
        ctx,
        nameParam(req.params.pool_id, 'pool_id'),
        labelParam(req.params.key, 'key', { key: true }),
        labelParam(req.params.value, 'value'),
        boolQuery(req.query, 'overwrite'),
      );
      return { status: 200, body: poolOut(reg, p) };
    })
    .add('DELETE', '/pools/:pool_id/label/:key', async (req) => {
      const p = await unlabelPool(
        ctx,
        nameParam(req.params.pool_id, 'pool_id'),
        labelParam(req.params.key, 'key', { key: true }),
      );
      return { status: 200, body: poolOut(reg, p) };
    })
    .add('GET', '/nodes/:node_id/block_devices', async (req) => {
      const all = boolQuery(req.query, 'all');
      node(req.params.node_id);
      return { status: 200, body: await ctx.engines.get(req.params.node_id).listBlockDevices(all) };
    })
    // A node that does not exist has no pools, replicas or nexuses to list: 404, not an empty list.
    .add('GET', '/nodes/:node_id/pools', async (req) => {
      const id = node(req.params.node_id).id;
      return {
        status: 200,
        body: [...reg.pools.values()].filter((p) => p.node === id).map((p) => poolOut(reg, p)),
      };
    })
    .add('GET', '/nodes/:node_id/pools/:pool_id', async (req) => ({
      status: 200,
      body: poolOut(reg, pool(req.params.pool_id, req.params.node_id)),
    }))
    .add('PUT', '/nodes/:node_id/pools/:pool_id', async (req) => {
      const body = createPoolBody(req.body);
      const p = await createPool(
        ctx,
        nameParam(req.params.node_id, 'node_id'),
        nameParam(req.params.pool_id, 'pool_id'),
        body.disks,
        body.labels,
        body.capacity,
      );
      return { status: 200, body: poolOut(reg, p) };
    })
    .add('DELETE', '/nodes/:node_id/pools/:pool_id', async (req) => {
      await deletePool(ctx, req.params.pool_id, req.params.node_id);
      return { status: 204 };
    })
    .add('GET', '/replicas', async () => ({
      status: 200,
      body: [...reg.replicas.values()].map((r) => replicaOut(reg, r)),
    }))
    .add('GET', '/replicas/:id', async (req) => {
      const r = reg.replicas.get(uuidParam(req.params.id, 'id'));
      if (!r) throw notFound('replica', req.params.id);
      return { status: 200, body: replicaOut(reg, r) };
    })
    .add('GET', '/nodes/:node_id/replicas', async (req) => {
      const id = node(req.params.node_id).id;
      return {
        status: 200,
        body: [...reg.replicas.values()]
          .filter((r) => reg.replicaNode(r) === id)
          .map((r) => replicaOut(reg, r)),
      };
    })
    .add('GET', '/nodes/:node_id/pools/:pool_id/replicas', async (req) => ({
      status: 200,
      body: [...reg.replicas.values()]
        .filter((r) => poolRefName(r.pool) === pool(req.params.pool_id, req.params.node_id).id)
        .map((r) => replicaOut(reg, r)),
    }))
    .add('GET', '/nexuses', async () => ({
      status: 200,
      body: [...reg.nexuses.values()].map((n) => nexusOut(reg, n)),
    }))
    .add('GET', '/nexuses/:nexus_id', async (req) => {
      const n = reg.nexuses.get(uuidParam(req.params.nexus_id, 'nexus_id'));
      if (!n) throw notFound('nexus', req.params.nexus_id);
      return { status: 200, body: nexusOut(reg, n) };
    })
    .add('GET', '/nodes/:node_id/nexuses', async (req) => {
      const id = node(req.params.node_id).id;
      return {
        status: 200,
        body: [...reg.nexuses.values()].filter((n) => n.node === id).map((n) => nexusOut(reg, n)),
      };
    })
    .add('GET', '/specs', async () => ({ status: 200, body: specsOut(reg) }));
}
