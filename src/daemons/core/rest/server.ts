import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenError } from '../../../lib/listen-error.js';
import type { Logger } from '../../../lib/logger.js';
import { restDuration, restRequests } from '../../../lib/metrics/catalog.js';
import { CLUSTER_HEADER } from '../../../lib/rest/endpoint.js';
import { stringifyJson } from '../../../lib/specs/index.js';
import { SvcError, toSvcError } from '../svc-error.js';
import type { Router } from './router.js';

const MAX_BODY = 1 << 20;
export const API_BASE = '/v0';

/**
 * A request core refuses before reading it through, with an HTTP status of its own (413, 415);
 * the answer closes the connection, so a half-sent body cannot be read as the next request.
 */
class RefusedBody extends SvcError {
  constructor(
    readonly httpStatus: number,
    message: string,
  ) {
    super('InvalidArgument', message);
  }
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY)
    throw new RefusedBody(413, `request body of ${declared} bytes is larger than ${MAX_BODY} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new RefusedBody(413, `request body is larger than ${MAX_BODY} bytes`);
    chunks.push(c as Buffer);
  }
  if (size === 0) return undefined;
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json')
    throw new RefusedBody(
      415,
      `request body must be JSON (content-type application/json), got '${type.slice(0, 64) || 'none'}'`,
    );
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new SvcError('Deserialize', `request body is not valid JSON: ${(err as Error).message}`);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  // Stored specs may hold u64s beyond 2^53 (reservation keys) as bigints: written as JSON numbers.
  const text = stringifyJson(body);
  res
    .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    .end(text);
}

export interface RestServer {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** HTTP server of REST API v0: routes under /v0, every error as `{details, message, kind}`. */
export async function startRestServer(
  router: Router,
  host: string,
  port: number,
  log: Logger,
  /** The key space core serves, named on every response (CLUSTER_HEADER). */
  cluster: string,
): Promise<RestServer> {
  const server = createServer((req, res) => {
    res.setHeader(CLUSTER_HEADER, cluster);
    const started = Date.now();
    const t0 = performance.now();
    const url = new URL(req.url ?? '/', 'http://localhost');
    // The route pattern, not the path: one series per endpoint whatever the ids.
    let route = 'unmatched';
    void (async () => {
      try {
        if (!url.pathname.startsWith(`${API_BASE}/`))
          throw new SvcError('NotFound', `no such endpoint: ${url.pathname}`);
        const { handler, params, pattern } = router.match(
          req.method ?? 'GET',
          url.pathname.slice(API_BASE.length),
        );
        route = pattern;
        const body = await readBody(req);
        const out = await handler({ method: req.method ?? 'GET', params, query: url.searchParams, body });
        send(res, out.status, out.body);
      } catch (err) {
        const e = toSvcError(err);
        if (e.status >= 500)
          log.warn(
            { method: req.method, path: url.pathname, kind: e.kind, err: e.message },
            'request failed',
          );
        if (e instanceof RefusedBody) res.setHeader('connection', 'close');
        send(res, e instanceof RefusedBody ? e.httpStatus : e.status, {
          details: e.details,
          message: e.message,
          kind: e.kind,
        });
      } finally {
        const method = methodLabel(req.method);
        restRequests.inc({ method, route, status: res.statusCode });
        restDuration.observe({ method, route }, (performance.now() - t0) / 1000);
        log.debug(
          { method: req.method, path: url.pathname, status: res.statusCode, ms: Date.now() - started },
          'request',
        );
      }
    })();
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  }).catch((err) => {
    throw listenError('the REST API', `${host}:${port}`, '--rest', err);
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    server,
    url: `http://${shown}:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Methods a client may invent are one label value, so they cannot grow the series without bound. */
const METHODS = new Set(['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
const methodLabel = (m: string | undefined) => (m && METHODS.has(m) ? m : 'other');
