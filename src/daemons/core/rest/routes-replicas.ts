import type { CoreContext } from '../context.js';
import {
  createReplica,
  deleteReplica,
  type ReplicaRef,
  replicaAt,
  shareReplica,
  unshareReplica,
} from '../ops/replica-admin.js';
import { replicaOut } from './present.js';
import type { RestRequest, Router } from './router.js';
import { nameParam, uuidParam } from './validate.js';
import { createReplicaBody, shareProtocol } from './validate-resources.js';

/**
 * Replica endpoints of docs/mayastor-compat.md §2.2, pool-scoped and node-scoped: create / destroy an unmanaged
 * replica, share it (over NBD; Mayastor's path says nvmf) and unshare it.
 */
export function replicaRoutes(router: Router, ctx: CoreContext): void {
  const ref = (req: RestRequest): ReplicaRef => ({
    uuid: uuidParam(req.params.replica_id, 'replica_id'),
    pool: nameParam(req.params.pool_id, 'pool_id'),
    node: req.params.node_id === undefined ? undefined : nameParam(req.params.node_id, 'node_id'),
  });
  const out = (r: ReplicaRef) => replicaOut(ctx.registry, replicaAt(ctx, r));

  for (const base of [
    '/pools/:pool_id/replicas/:replica_id',
    '/nodes/:node_id/pools/:pool_id/replicas/:replica_id',
  ]) {
    router
      .add('PUT', base, async (req) => {
        const r = ref(req);
        const body = createReplicaBody(req.body);
        await createReplica(ctx, { ...r, ...body });
        return { status: 200, body: out(r) };
      })
      .add('DELETE', base, async (req) => {
        await deleteReplica(ctx, ref(req));
        return { status: 204 };
      })
      .add('PUT', `${base}/share/:protocol`, async (req) => {
        shareProtocol(req.params.protocol);
        const hosts = req.query
          .getAll('allowed-hosts')
          .flatMap((h) => h.split(','))
          .filter(Boolean);
        return { status: 200, body: await shareReplica(ctx, ref(req), hosts) };
      })
      .add('DELETE', `${base}/share`, async (req) => {
        await unshareReplica(ctx, ref(req));
        return { status: 204 };
      });
  }
  router.add('GET', '/nodes/:node_id/pools/:pool_id/replicas/:replica_id', async (req) => ({
    status: 200,
    body: out(ref(req)),
  }));
}
