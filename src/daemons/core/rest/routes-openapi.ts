import { SvcError } from '../svc-error.js';
import { openApiDocument } from './openapi.js';
import type { Router } from './router.js';
import { nameParam } from './validate.js';

/**
 * `GET /v0/api/spec` serves the OpenAPI document (where Mayastor's api-rest serves its own), and
 * `PUT /v0/nodes/{node}/jsongrpc/{method}` answers 501 Unimplemented: Mayastor passes the call to the
 * io-engine's SPDK JSON-RPC, and storctl's NBD io-engines have none.
 */
export function openApiRoutes(router: Router): void {
  router
    .add('GET', '/api/spec', async () => ({ status: 200, body: openApiDocument }))
    .add('PUT', '/nodes/:node/jsongrpc/:method', async (req) => {
      const node = nameParam(req.params.node, 'node');
      throw new SvcError(
        'Unimplemented',
        `JSON-RPC method '${req.params.method.slice(0, 64)}' cannot be called on node '${node}': storctl io-engines serve NBD and have no SPDK JSON-RPC`,
        'put_node_jsongrpc is not supported by storctl: its io-engines have no JSON-RPC interface',
      );
    });
}
