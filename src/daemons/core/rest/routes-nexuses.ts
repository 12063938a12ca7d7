import type { CoreContext } from '../context.js';
import {
  addNexusChild,
  createNexus,
  destroyNexus,
  nexusAt,
  nexusChildren,
  removeNexusChild,
  sameChild,
  shareNexus,
  unshareNexus,
} from '../ops/nexus-admin.js';
import { SvcError } from '../svc-error.js';
import { nexusOut } from './present.js';
import type { RestRequest, Router } from './router.js';
import { nameParam, uuidParam } from './validate.js';
import { childUriParam, createNexusBody, shareProtocol } from './validate-resources.js';

const childOut = (c: { uri: string; state: string; rebuildProgress?: number | null }) => ({
  uri: c.uri,
  state: c.state,
  rebuildProgress: c.rebuildProgress ?? undefined,
});

/**
 * Nexus endpoints of docs/mayastor-compat.md §2.2: node-scoped create / get / destroy, destroy by id, children
 * (the child id is its URI, %-encoded as one path segment) and share / unshare.
 */
export function nexusRoutes(router: Router, ctx: CoreContext): void {
  const id = (req: RestRequest) => uuidParam(req.params.nexus_id, 'nexus_id');
  const node = (req: RestRequest) =>
    req.params.node_id === undefined ? undefined : nameParam(req.params.node_id, 'node_id');
  const child = (req: RestRequest) => childUriParam(req.params.child_id, 'child_id');

  router
    .add('DELETE', '/nexuses/:nexus_id', async (req) => {
      await destroyNexus(ctx, id(req));
      return { status: 204 };
    })
    .add('GET', '/nodes/:node_id/nexuses/:nexus_id', async (req) => ({
      status: 200,
      body: nexusOut(ctx.registry, nexusAt(ctx, id(req), node(req))),
    }))
    .add('PUT', '/nodes/:node_id/nexuses/:nexus_id', async (req) => {
      const body = createNexusBody(req.body);
      const spec = await createNexus(ctx, node(req)!, id(req), body.children, body.size);
      return { status: 200, body: nexusOut(ctx.registry, spec) };
    })
    .add('DELETE', '/nodes/:node_id/nexuses/:nexus_id', async (req) => {
      await destroyNexus(ctx, id(req), node(req));
      return { status: 204 };
    })
    .add('PUT', '/nodes/:node_id/nexuses/:nexus_id/share/:protocol', async (req) => {
      shareProtocol(req.params.protocol);
      return { status: 200, body: await shareNexus(ctx, id(req), node(req)) };
    })
    .add('DELETE', '/nodes/:node_id/nexuses/:nexus_id/share', async (req) => {
      await unshareNexus(ctx, id(req), node(req));
      return { status: 204 };
    });

  for (const base of ['/nexuses/:nexus_id', '/nodes/:node_id/nexuses/:nexus_id']) {
    router
      .add('GET', `${base}/children`, async (req) => ({
        status: 200,
        body: (await nexusChildren(ctx, nexusAt(ctx, id(req), node(req)))).map(childOut),
      }))
      .add('GET', `${base}/children/:child_id`, async (req) => {
        const uri = child(req);
        const found = (await nexusChildren(ctx, nexusAt(ctx, id(req), node(req)))).find((c) =>
          sameChild(c.uri, uri),
        );
        if (!found) throw new SvcError('NotFound', `nexus '${id(req)}' has no child '${uri}'`);
        return { status: 200, body: childOut(found) };
      })
      .add('PUT', `${base}/children/:child_id`, async (req) => ({
        status: 200,
        body: childOut(await addNexusChild(ctx, id(req), child(req), node(req))),
      }))
      .add('DELETE', `${base}/children/:child_id`, async (req) => {
        await removeNexusChild(ctx, id(req), child(req), node(req));
        return { status: 204 };
      });
  }
}
