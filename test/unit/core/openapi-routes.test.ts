import { describe, expect, it } from 'vitest';
import type { CoreContext } from '../../../src/daemons/core/context.js';
import { openApiDocument } from '../../../src/daemons/core/rest/openapi.js';
import { Router } from '../../../src/daemons/core/rest/router.js';
import { openApiRoutes } from '../../../src/daemons/core/rest/routes-openapi.js';
import { resourceRoutes } from '../../../src/daemons/core/rest/routes-resources.js';
import { volumeRoutes } from '../../../src/daemons/core/rest/routes-volumes.js';
import { watchRoutes } from '../../../src/daemons/core/rest/routes-watches.js';
import type { VolumeWatches } from '../../../src/daemons/core/watches.js';
import { OpenApiValidator } from '../../helpers/openapi-validate.js';

/**
 * Core's router and the OpenAPI document describe the same API: every route core registers is a
 * documented operation, and every documented operation reaches a route. Registration only stores the
 * handlers, so an empty registry stands in for core's context; no handler runs.
 */

function coreRouter(): Router {
  const router = new Router();
  const ctx = { registry: {} } as unknown as CoreContext;
  volumeRoutes(router, ctx);
  resourceRoutes(router, ctx);
  watchRoutes(router, ctx, {} as VolumeWatches);
  openApiRoutes(router);
  return router;
}

const routesOf = (router: Router) =>
  (router as unknown as { routes: { method: string; parts: string[] }[] }).routes;

const UUID = '0b1a5ad4-93b6-4a5e-9a53-2f3c1c6d9e01';
/** A concrete path for a template: a uuid for ids that are uuids, a name otherwise. */
const concrete = (template: string) =>
  template.replace(/\{(volume_id|snapshot_id|nexus_id|replica_id)\}/g, UUID).replace(/\{[^}]+\}/g, 'x1');

describe('core router and OpenAPI document', () => {
  it('documents every route core serves', () => {
    const v = new OpenApiValidator();
    const routes = routesOf(coreRouter());
    expect(routes.length).toBeGreaterThan(70);
    const undocumented = routes
      .map((r) => {
        // `/:volumes_id/share` serves Mayastor's misprinted `/volumes{volume_id}/share`
        const path = r.parts
          .map((p) => (p === ':volumes_id' ? `volumes${UUID}` : p.replace(/:[a-z_]+/g, 'x1')))
          .join('/');
        return { method: r.method, path: `/${path}` };
      })
      .filter((r) => !v.operation(r.method, r.path))
      .map((r) => `${r.method} ${r.path}`);
    expect(undocumented).toEqual([]);
  });

  it('routes every documented operation', () => {
    const router = coreRouter();
    const unrouted: string[] = [];
    for (const [template, item] of Object.entries(openApiDocument.paths as Record<string, object>))
      for (const method of Object.keys(item)) {
        try {
          router.match(method.toUpperCase(), concrete(template));
        } catch (e) {
          unrouted.push(`${method.toUpperCase()} ${template}: ${(e as Error).message}`);
        }
      }
    expect(unrouted).toEqual([]);
  });
});
