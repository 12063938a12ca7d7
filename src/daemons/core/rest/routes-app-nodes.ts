import type { AppNodeSpec } from '../../../lib/specs/app-node.js';
import type { CoreContext } from '../context.js';
import { deregisterAppNode, getAppNode, listAppNodes, registerAppNode } from '../ops/app-node.js';
import type { RestRequest, Router } from './router.js';
import { paginate } from './routes-volumes.js';
import { nameParam } from './validate.js';
import { registerAppNodeBody } from './validate-resources.js';

const appNodeOut = (a: AppNodeSpec) => ({
  id: a.id,
  spec: { id: a.id, endpoint: a.endpoint, labels: a.labels ?? undefined },
});

/** App-node registry of docs/mayastor-compat.md §2.2 (CSI nodes register with core): paginated list, get, register, deregister. */
export function appNodeRoutes(router: Router, ctx: CoreContext): void {
  const id = (req: RestRequest) => nameParam(req.params.app_node_id, 'app_node_id');
  router
    .add('GET', '/app-nodes', async (req) => {
      const page = paginate(await listAppNodes(ctx), req.query);
      return { status: 200, body: { entries: page.entries.map(appNodeOut), next_token: page.next_token } };
    })
    .add('GET', '/app-nodes/:app_node_id', async (req) => ({
      status: 200,
      body: appNodeOut(await getAppNode(ctx, id(req))),
    }))
    .add('PUT', '/app-nodes/:app_node_id', async (req) => {
      const body = registerAppNodeBody(req.body);
      await registerAppNode(ctx, { id: id(req), endpoint: body.endpoint, labels: body.labels });
      return { status: 204 };
    })
    .add('DELETE', '/app-nodes/:app_node_id', async (req) => {
      await deregisterAppNode(ctx, id(req));
      return { status: 204 };
    });
}
