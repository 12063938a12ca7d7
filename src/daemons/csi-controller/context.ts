import { status } from '@grpc/grpc-js';
import { restKind, restToCsiError } from '../../lib/csi/errors.js';
import { GrpcError, unary } from '../../lib/grpc/status.js';
import type { Logger } from '../../lib/logger.js';
import type { RestClient } from '../../lib/rest/client.js';
import type { CsiControllerConfig } from './config.js';
import type { OpGuard } from './guard.js';

/** What every handler of the controller needs. */
export interface Deps {
  rest: RestClient;
  guard: OpGuard;
  log: Logger;
  config: CsiControllerConfig;
}

/**
 * A unary handler whose failures (REST, transport, validation) reach the client as the CSI status of
 * lib/csi/errors.ts. Requests are never logged whole: they may carry secrets.
 */
export function rpc<Req, Res>(deps: Deps, name: string, handler: (req: Req) => Promise<Res>) {
  return unary(async (req: Req) => {
    const t0 = performance.now();
    try {
      const res = await handler(req);
      deps.log.debug({ rpc: name, ms: Math.round(performance.now() - t0) }, 'ok');
      return res;
    } catch (err) {
      const e = restToCsiError(err, name);
      deps.log.info({ rpc: name, code: status[e.code], err: e.message }, 'failed');
      throw e;
    }
  });
}

export const notFound = (message: string) => new GrpcError(status.NOT_FOUND, message);

/** The value of a REST call, or undefined when core answers NotFound. */
export async function orNotFound<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (restKind(err) === 'NotFound') return undefined;
    throw err;
  }
}

/** A CSI page token: the decimal offset core paginates by. Anything else is ABORTED (spec). */
export function parseToken(token: string | undefined): number | undefined {
  if (!token) return undefined;
  if (!/^\d{1,9}$/.test(token))
    throw new GrpcError(
      status.ABORTED,
      `starting_token '${token.slice(0, 32)}' is not a token this plugin issued`,
    );
  return Number(token);
}

export function parseMaxEntries(n: number | undefined): number {
  const v = n ?? 0;
  if (!Number.isInteger(v) || v < 0)
    throw new GrpcError(status.INVALID_ARGUMENT, 'max_entries must not be negative');
  return v;
}

/** A page that starts past the end answers ABORTED: the token no longer points into the list. */
export function checkPage(start: number | undefined, entries: unknown[]): void {
  if (start && entries.length === 0)
    throw new GrpcError(
      status.ABORTED,
      `starting_token ${start} is past the end of the list; list again from the start`,
    );
}
