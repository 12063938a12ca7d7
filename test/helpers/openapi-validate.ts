import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../src/daemons/core/rest/openapi.js';

// vitest's hooks only exist under its runner: the benchmarks (tsx) import the cluster helper too,
// and importing 'vitest' outside the runner throws. There the drift checks still run, unhooked.
const vitest = process.env.VITEST ? await import('vitest') : null;

/**
 * Checks REST responses against storctl's OpenAPI document (src/daemons/core/rest/openapi.ts): the
 * operation is found by method + path template, the response by status (exact, then `4XX`/`5XX`),
 * and the body validated with ajv against that response's schema. A body without a documented
 * operation, status or schema is drift too. Counts what it validated.
 */

type Obj = Record<string, unknown>;

interface Operation {
  method: string;
  template: string;
  match: RegExp[];
  literals: number;
  responses: Record<string, Obj>;
}

export class OpenApiDrift extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OpenApiDrift';
  }
}

const SCHEMA_ID = 'storctl-openapi';
// ajv-formats is CommonJS: under ESM its function is the default export's `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

function segmentRegex(seg: string): RegExp {
  const src = seg
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '([^/]+)' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${src}$`);
}

/** JSON pointer of an operation's response schema within the document. */
function responsePointer(op: Operation, key: string): string {
  const path = op.template.replace(/~/g, '~0').replace(/\//g, '~1');
  return `/paths/${path}/${op.method.toLowerCase()}/responses/${key}/content/application~1json/schema`;
}

/** A validator over one OpenAPI document; `check` throws OpenApiDrift when a response drifts. */
export class OpenApiValidator {
  readonly ops: Operation[] = [];
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();
  validated = 0;
  /** `METHOD template status` of every validated response. */
  readonly seen = new Set<string>();

  constructor(readonly doc: Obj = openApiDocument as unknown as Obj) {
    this.ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(this.ajv);
    const intIn = (lo: number, hi: number) => ({
      type: 'number' as const,
      validate: (n: number) => Number.isInteger(n) && n >= lo && n <= hi,
    });
    this.ajv.addFormat('uint8', intIn(0, 255));
    this.ajv.addFormat('uint64', intIn(0, Number.MAX_SAFE_INTEGER));
    this.ajv.addSchema(doc, SCHEMA_ID);
    for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, Obj>>)) {
      const segs = template.split('/').filter(Boolean);
      for (const [method, op] of Object.entries(item)) {
        this.ops.push({
          method: method.toUpperCase(),
          template,
          match: segs.map(segmentRegex),
          literals: segs.join('').replace(/\{[^}]+\}/g, '').length,
          responses: op.responses as Record<string, Obj>,
        });
      }
    }
  }

  /** The documented operation for a request, or undefined. */
  operation(method: string, path: string): Operation | undefined {
    const segs = path.split('/').filter(Boolean);
    let best: Operation | undefined;
    for (const op of this.ops) {
      if (op.method !== method.toUpperCase() || op.match.length !== segs.length) continue;
      if (!op.match.every((re, i) => re.test(segs[i]))) continue;
      if (!best || op.literals > best.literals) best = op;
    }
    return best;
  }

  /** Compile the schema of every documented JSON response (unresolvable references throw); their count. */
  compileAll(): number {
    let n = 0;
    for (const op of this.ops)
      for (const [key, resp] of Object.entries(op.responses))
        if (resp.content) {
          this.validator(responsePointer(op, key));
          n++;
        }
    return n;
  }

  private validator(pointer: string): ValidateFunction {
    let v = this.compiled.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: `${SCHEMA_ID}#${pointer}` });
      this.compiled.set(pointer, v);
    }
    return v;
  }

  /**
   * Validate one response. `url` is the request path (with or without `/v0` and a query); `body` the
   * parsed JSON, or undefined for an empty body.
   */
  check(method: string, url: string, status: number, body: unknown): void {
    const path = url.replace(/^https?:\/\/[^/]+/, '').split('?')[0];
    const rel = path.startsWith('/v0/') || path === '/v0' ? path.slice(3) : path;
    const where = `${method} ${path} → ${status}`;
    const op = this.operation(method, rel);
    let pointer: string;
    let key = '';
    if (!op) {
      // An undocumented path may only be answered with an error body (404 no such endpoint).
      if (status < 400)
        throw new OpenApiDrift(`${where}: no operation in the OpenAPI document for ${method} ${rel}`);
      pointer = '/components/schemas/RestJsonError';
    } else {
      key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => op.responses[k]) ?? '';
      if (!key)
        throw new OpenApiDrift(
          `${where}: status ${status} is not documented for ${op.method} ${op.template}`,
        );
      const resp = op.responses[key];
      if (typeof resp.$ref === 'string') pointer = `${resp.$ref.slice(1)}/content/application~1json/schema`;
      else {
        const content = resp.content as Obj | undefined;
        if (!content) {
          if (body !== undefined)
            throw new OpenApiDrift(
              `${where}: ${op.template} documents no body for ${key}, got ${JSON.stringify(body).slice(0, 200)}`,
            );
          this.validated++;
          this.seen.add(`${op.method} ${op.template} ${status}`);
          return;
        }
        pointer = responsePointer(op, key);
      }
    }
    if (body === undefined) throw new OpenApiDrift(`${where}: empty body where the document has a schema`);
    const v = this.validator(pointer);
    if (!v(body)) {
      const errs = (v.errors ?? [])
        .slice(0, 8)
        .map((e) => `${e.instancePath || '/'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`)
        .join('; ');
      throw new OpenApiDrift(
        `${where}: body drifts from ${op ? `${op.template} ${key}` : 'RestJsonError'}: ${errs}\n  body: ${JSON.stringify(body).slice(0, 600)}`,
      );
    }
    this.validated++;
    this.seen.add(op ? `${op.method} ${op.template} ${status}` : `(no operation) ${status}`);
  }
}

// --- the suites' shared instance ---------------------------------------------------------------------

let shared: OpenApiValidator | undefined;
const drifts: string[] = [];

/** The validator every REST suite in this process shares. */
export function openApi(): OpenApiValidator {
  shared ??= new OpenApiValidator();
  return shared;
}

/** Check one response; drift is thrown and also remembered, so a caller that swallows it still fails. */
export function checkResponse(r: { method: string; path: string; status: number; body: unknown }): void {
  try {
    openApi().check(r.method, r.path, r.status, r.body);
  } catch (err) {
    drifts.push((err as Error).message);
    throw err;
  }
}

/** fetch, with the response body checked against the document; the body is read and returned parsed. */
export async function checkedFetch(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {},
): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text === '' ? undefined : text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // the raw text: drift unless the document allows it
  }
  checkResponse({ method: init.method ?? 'GET', path: new URL(url).pathname, status: res.status, body });
  return { status: res.status, body, text };
}

let hooked = false;

/**
 * Make the current test file fail on any drift seen during a test (even one a retry loop swallowed)
 * and print how many responses it validated. Called at import time of the suites' cluster helper.
 */
export function failOnDrift(): void {
  if (hooked || !vitest) return;
  hooked = true;
  const { afterAll, afterEach } = vitest;
  afterEach(() => {
    if (drifts.length === 0) return;
    const seen = drifts.splice(0);
    throw new OpenApiDrift(`REST bodies drift from the OpenAPI document:\n${seen.join('\n')}`);
  });
  afterAll((suite) => {
    const v = openApi();
    console.log(
      `[openapi] ${v.validated} REST responses validated against the document (${suite.name}; ${v.seen.size} distinct operation+status)`,
    );
    // STORCTL_OPENAPI_SEEN=1 lists them, to take the union over suites
    if (process.env.STORCTL_OPENAPI_SEEN) for (const s of v.seen) console.log(`[openapi-seen] ${s}`);
  });
}
