import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResponse } from '../../helpers/openapi-validate.js';
import { TestCluster } from './cluster.js';
import { call } from './store-outage.js';

/** One raw request: any body, any content type; the answer's status, body and connection header. */
function raw(base: string, method: string, path: string, body: string | Buffer, type?: string) {
  return new Promise<{ status: number; body: string; connection?: string }>((resolve, reject) => {
    const req = request(
      `${base}/v0${path}`,
      { method, agent: false, headers: type ? { 'content-type': type } : {} },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          let parsed: unknown = text === '' ? undefined : text;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            // not JSON: drift, unless the document allows it
          }
          try {
            checkResponse({ method, path: `/v0${path}`, status, body: parsed });
          } catch (err) {
            reject(err);
            return;
          }
          resolve({ status, body: text, connection: res.headers.connection });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const volume = (over: Record<string, unknown>) => ({
  size: 1 << 20,
  replicas: 1,
  thin: true,
  policy: { self_heal: true },
  ...over,
});

/**
 * Hostile REST input, each case a named regression: refused at the boundary with a 4xx that names
 * the field, and nothing stored.
 */
describe('REST refuses hostile input at the boundary (embedded store)', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 1, pools: false });
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
  });

  it.each([
    [
      'a NUL byte in a pool disk path',
      'PUT',
      '/nodes/node-1/pools/p1',
      { disks: ['/tmp/a\u0000b'] },
      'disks[0]',
    ],
    [
      'a label key with a NUL',
      'PUT',
      '/nodes/node-1/pools/p1',
      { disks: ['/tmp/p1'], labels: { 'a\u0000': 'b' } },
      'labels key',
    ],
    [
      'an empty label key',
      'PUT',
      `/volumes/${crypto.randomUUID()}`,
      volume({ labels: { '': 'x' } }),
      'labels key',
    ],
    [
      'a 100,000-character label key',
      'PUT',
      `/volumes/${crypto.randomUUID()}`,
      volume({ labels: { ['k'.repeat(100_000)]: 'v' } }),
      'labels key',
    ],
    [
      'a ~1 MiB label value',
      'PUT',
      `/volumes/${crypto.randomUUID()}`,
      volume({ labels: { k: 'v'.repeat(1_000_000) } }),
      'labels.k',
    ],
    [
      'pool-create labels the label endpoint refuses',
      'PUT',
      '/nodes/node-1/pools/p1',
      { disks: ['/tmp/p1'], labels: { 'a b': 'c' } },
      'labels key',
    ],
    [
      'an affinity group id that is an object',
      'PUT',
      `/volumes/${crypto.randomUUID()}`,
      volume({ affinity_group: { id: { x: 1 } } }),
      'affinity_group.id',
    ],
    [
      'a topology label with a NUL',
      'PUT',
      `/volumes/${crypto.randomUUID()}`,
      volume({ topology: { pool_topology: { labelled: { inclusion: { a: 'b\u0000' } } } } }),
      'inclusion',
    ],
  ])('%s: 400 naming the field, nothing stored', async (_name, method, path, body, field) => {
    const before = await c.rest.listVolumes();
    const r = await call(c.restUrl, method, path, body);
    expect(r.status, JSON.stringify(r.body).slice(0, 200)).toBe(400);
    expect(r.body.kind).toBe('InvalidArgument');
    expect(r.body.message).toContain(field);
    expect(await c.rest.listVolumes()).toEqual(before);
    expect((await c.rest.listPools()).length).toBe(0);
  });

  it('a boolean query flag that is neither true nor false is refused (400), not read as false', async () => {
    for (const [method, path] of [
      ['DELETE', `/volumes/${crypto.randomUUID()}?if_unpublished=yes`],
      ['DELETE', `/volumes/${crypto.randomUUID()}/target?force=1`],
    ]) {
      const r = await call(c.restUrl, method, path);
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.message).toMatch(/must be true or false/);
    }
  });

  it('a 500,000-character frontend_node is refused (400) before the volume is looked up', async () => {
    const r = await call(c.restUrl, 'PUT', `/volumes/${crypto.randomUUID()}/target`, {
      protocol: 'nbd',
      publish_context: {},
      frontend_node: 'n'.repeat(500_000),
    });
    expect(r.status).toBe(400);
    expect(r.body.message).toContain('frontend_node');
  });

  it('a nexus child on a host that is no io-engine of the cluster is refused (no connection made for the caller)', async () => {
    const nx = crypto.randomUUID();
    const r = await call(c.restUrl, 'PUT', `/nodes/node-1/nexuses/${nx}`, {
      size: 1 << 20,
      children: ['nbd://127.0.0.1:1/anything'],
    });
    expect(r.status).toBe(400);
    expect(r.body.message).toContain('is not served by an io-engine of this cluster');
    expect((await call(c.restUrl, 'GET', `/nodes/node-1/nexuses/${nx}`)).status).toBe(404);
  });

  it('a body that is not declared JSON is 415; a JSON body still works', async () => {
    const id = crypto.randomUUID();
    const plain = await raw(c.restUrl, 'PUT', `/volumes/${id}`, JSON.stringify(volume({})), 'text/plain');
    expect(plain.status).toBe(415);
    expect(JSON.parse(plain.body).message).toContain('content-type application/json');
    expect((await call(c.restUrl, 'GET', `/volumes/${id}`)).status).toBe(404);
    const json = await raw(
      c.restUrl,
      'PUT',
      `/volumes/${id}`,
      JSON.stringify(volume({})),
      'application/json',
    );
    // The same body declared JSON is read and scheduled (no pool here: ResourceExhausted, not 415).
    expect(JSON.parse(json.body).kind, json.body).toBe('ResourceExhausted');
  });

  it('a 2 MiB body is 413 and closes the connection; the next request is served', async () => {
    const big = Buffer.alloc(2 << 20, 0x20);
    const r = await raw(c.restUrl, 'PUT', `/volumes/${crypto.randomUUID()}`, big, 'application/json');
    expect(r.status).toBe(413);
    expect(r.connection).toBe('close');
    expect((await call(c.restUrl, 'GET', '/nodes')).status).toBe(200);
  });
});
