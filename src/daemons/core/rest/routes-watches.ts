import type { CoreContext } from '../context.js';
import { callbackUrl, type VolumeWatches } from '../watches.js';
import type { RestRequest, Router } from './router.js';
import { uuidParam } from './validate.js';

const vid = (req: RestRequest) => uuidParam(req.params.volume_id, 'volume_id');

/** `/watches/volumes/{volume_id}?callback=url` (docs/mayastor-compat.md §2.2): list, register, remove. */
export function watchRoutes(router: Router, ctx: CoreContext, watches: VolumeWatches): void {
  router
    .add('GET', '/watches/volumes/:volume_id', async (req) => {
      const id = vid(req);
      const list = watches.list(id);
      if (list.length === 0) ctx.registry.volume(id); // NotFound for an unknown volume
      return { status: 200, body: list };
    })
    .add('PUT', '/watches/volumes/:volume_id', async (req) => {
      await watches.add(vid(req), callbackUrl(req.query.get('callback')));
      return { status: 204 };
    })
    .add('DELETE', '/watches/volumes/:volume_id', async (req) => {
      await watches.remove(vid(req), callbackUrl(req.query.get('callback')));
      return { status: 204 };
    });
}
