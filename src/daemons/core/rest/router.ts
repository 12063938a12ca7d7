import { SvcError } from '../svc-error.js';

/** A request as handlers see it: path params, query, and the parsed JSON body (if any). */
export interface RestRequest {
  method: string;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
}

export interface RestResponse {
  status: number;
  body?: unknown;
}

export type Handler = (req: RestRequest) => Promise<RestResponse>;

interface Route {
  method: string;
  pattern: string;
  parts: string[];
  handler: Handler;
}

/** A tiny path router: `/volumes/:volume_id/target`; `:key=:value` segments split on '='. */
export class Router {
  private routes: Route[] = [];

  add(method: string, pattern: string, handler: Handler): this {
    this.routes.push({ method, pattern, parts: pattern.split('/').filter(Boolean), handler });
    return this;
  }

  /** The route for a request; literal segments win over parameters (`/volumes/snapshots`). */
  match(method: string, path: string): { handler: Handler; params: Record<string, string>; pattern: string } {
    const segs = path.split('/').filter(Boolean).map(decodeSegment);
    let pathMatched = false;
    let best: { handler: Handler; params: Record<string, string>; pattern: string; literals: number } | null =
      null;
    for (const r of this.routes) {
      const params = matchParts(r.parts, segs);
      if (!params) continue;
      pathMatched = true;
      if (r.method !== method) continue;
      const literals = r.parts.filter((p) => !p.startsWith(':')).length;
      if (!best || literals > best.literals)
        best = { handler: r.handler, params, pattern: r.pattern, literals };
    }
    if (best) return { handler: best.handler, params: best.params, pattern: best.pattern };
    if (pathMatched) throw new SvcError('NotAcceptable', `method ${method} is not allowed on ${path}`);
    throw new SvcError('NotFound', `no such endpoint: ${method} ${path}`);
  }
}

function matchParts(parts: string[], segs: string[]): Record<string, string> | null {
  if (parts.length !== segs.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    const s = segs[i];
    if (p.startsWith(':') && p.includes('=')) {
      // `:key=:value` (label endpoints)
      const [k, v] = p.split('=');
      const eq = s.indexOf('=');
      if (eq <= 0) return null;
      params[k.slice(1)] = s.slice(0, eq);
      params[v.slice(1)] = s.slice(eq + 1);
    } else if (p.startsWith(':')) {
      params[p.slice(1)] = s;
    } else if (p !== s) return null;
  }
  return params;
}

/** A path segment, %-decoded; a malformed escape is the caller's error (400), not ours (500). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SvcError('InvalidArgument', `malformed %-escape in URL path segment '${segment.slice(0, 64)}'`);
  }
}
