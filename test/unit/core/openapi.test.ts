import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../src/daemons/core/rest/openapi.js';
import { OpenApiDrift, OpenApiValidator } from '../../helpers/openapi-validate.js';

const UUID = '0b1a5ad4-93b6-4a5e-9a53-2f3c1c6d9e01';
const UUID2 = '5f9c7c0e-5a44-4b7e-8f6e-0c1e2d3f4a5b';

const volume = () => ({
  spec: {
    uuid: UUID,
    size: 1048576,
    num_replicas: 1,
    status: 'Created',
    policy: { self_heal: true },
    thin: true,
    num_snapshots: 0,
    target: { node: 'node-1', protocol: 'nbd' },
  },
  state: {
    uuid: UUID,
    size: 1048576,
    status: 'Online',
    replica_topology: {
      [UUID2]: {
        node: 'node-1',
        pool: 'pool-1',
        state: 'Online',
        usage: { capacity: 1048576, allocated: 0, allocated_snapshots: 0, allocated_all_snapshots: 0 },
      },
    },
  },
});

const refs = (v: unknown, out: string[] = []): string[] => {
  if (Array.isArray(v)) for (const x of v) refs(x, out);
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else refs(x, out);
    }
  return out;
};

describe('the OpenAPI document', () => {
  it('has unique operation ids, resolvable references and compilable response schemas', () => {
    const ids = Object.values(openApiDocument.paths).flatMap((item) =>
      Object.values(item as Record<string, { operationId: string }>).map((op) => op.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
    const doc = openApiDocument as unknown as Record<string, Record<string, Record<string, unknown>>>;
    for (const r of new Set(refs(openApiDocument))) {
      const [, section, kind, name] = r.split('/');
      expect(doc[section]?.[kind]?.[name], r).toBeDefined();
    }
    const v = new OpenApiValidator();
    expect(v.ops.length).toBe(ids.length);
    expect(v.compileAll()).toBe(58);
    // every documented body compiles: check an error body against each operation's 4XX
    for (const op of v.ops) {
      const path = op.template.replace(/\{[^}]+\}/g, 'x');
      v.check(op.method, `/v0${path}`, 400, { kind: 'InvalidArgument', message: 'm', details: 'd' });
    }
  });

  it("marks storctl's extensions", () => {
    const s = openApiDocument.components.schemas;
    expect(s.VolumeShareProtocol).toMatchObject({
      enum: ['nvmf', 'iscsi', 'nbd'],
      'x-storctl-extension': true,
    });
    const paths = openApiDocument.paths as Record<string, Record<string, unknown>>;
    expect(paths['/nodes/{node}/jsongrpc/{method}'].put).toMatchObject({
      operationId: 'put_node_jsongrpc',
      'x-storctl-extension': true,
    });
  });
});

describe('OpenApiValidator', () => {
  it('accepts a body that matches its operation and counts it', () => {
    const v = new OpenApiValidator();
    v.check('GET', `/v0/volumes/${UUID}`, 200, volume());
    v.check('GET', 'http://127.0.0.1:1/v0/volumes?max_entries=0', 200, { entries: [volume()] });
    v.check('DELETE', `/v0/volumes/${UUID}`, 204, undefined);
    expect(v.validated).toBe(3);
  });

  it('rejects a body missing a required field, naming the field', () => {
    const v = new OpenApiValidator();
    const bad = volume() as {
      state: { replica_topology: Record<string, { usage: Record<string, number> }> };
    };
    delete (bad.state.replica_topology[UUID2].usage as Record<string, number>).allocated_snapshots;
    expect(() => v.check('GET', `/v0/volumes/${UUID}`, 200, bad)).toThrow(/allocated_snapshots/);
    expect(() => v.check('GET', `/v0/volumes/${UUID}`, 200, { spec: volume().spec })).toThrow(OpenApiDrift);
    expect(v.validated).toBe(0);
  });

  it('rejects undocumented operations, statuses and bodies', () => {
    const v = new OpenApiValidator();
    expect(() => v.check('GET', '/v0/nowhere', 200, {})).toThrow(/no operation/);
    expect(() => v.check('GET', `/v0/volumes/${UUID}`, 302, undefined)).toThrow(/not documented/);
    expect(() => v.check('DELETE', `/v0/volumes/${UUID}`, 204, { x: 1 })).toThrow(/no body/);
    expect(() =>
      v.check('GET', `/v0/volumes/${UUID}`, 404, { kind: 'Nope', message: '', details: '' }),
    ).toThrow(/kind/);
    // an unknown path may still be answered with an error body
    v.check('GET', '/v0/nowhere', 404, { kind: 'NotFound', message: 'no such endpoint', details: '' });
  });

  it('matches templates: literals first, key=value and the misprinted unshare path', () => {
    const v = new OpenApiValidator();
    expect(v.operation('GET', '/volumes/snapshots')?.template).toBe('/volumes/snapshots');
    expect(v.operation('GET', `/volumes/${UUID}`)?.template).toBe('/volumes/{volume_id}');
    expect(v.operation('PUT', '/nodes/n1/label/zone=a')?.template).toBe('/nodes/{id}/label/{key}={value}');
    expect(v.operation('DELETE', '/nodes/n1/label/zone')?.template).toBe('/nodes/{id}/label/{key}');
    expect(v.operation('DELETE', `/volumes${UUID}/share`)?.template).toBe('/volumes{volume_id}/share');
    expect(v.operation('PUT', '/nodes/n1/jsongrpc/bdev_get_bdevs')?.template).toBe(
      '/nodes/{node}/jsongrpc/{method}',
    );
  });
});
