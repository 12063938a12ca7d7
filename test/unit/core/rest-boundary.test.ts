import { describe, expect, it } from 'vitest';
import { Router } from '../../../src/daemons/core/rest/router.js';
import {
  createPoolBody,
  createVolumeBody,
  labelParam,
  publishVolumeBody,
  uuidParam,
} from '../../../src/daemons/core/rest/validate.js';
import { KIND_STATUS, type SvcError, toSvcError } from '../../../src/daemons/core/svc-error.js';
import { ExitCode, StorctlError } from '../../../src/lib/errors.js';
import { IoEngineError } from '../../../src/lib/io-engine/client.js';
import { RestError } from '../../../src/lib/rest/errors.js';

const fieldError = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e as SvcError;
  }
  throw new Error('no error');
};

describe('REST body validation names the field', () => {
  const ok = { size: 1024, replicas: 2, thin: true, policy: { self_heal: true } };
  it('accepts a Mayastor CreateVolumeBody and maps topology to the stored form', () => {
    const b = createVolumeBody({
      ...ok,
      topology: { pool_topology: { labelled: { inclusion: { a: 'b' }, exclusion: {} } } },
      labels: { x: 'y' },
    });
    expect(b.topology).toEqual({
      node: null,
      pool: { Labelled: { inclusion: { a: 'b' }, exclusion: {}, creation_affinity_keys: null } },
    });
  });
  it.each([
    [{ ...ok, size: undefined }, 'size'],
    [{ ...ok, size: -1 }, 'size'],
    [{ ...ok, replicas: 0 }, 'replicas'],
    [{ ...ok, thin: 'yes' }, 'thin'],
    [{ ...ok, policy: undefined }, 'policy'],
    [{ ...ok, policy: {} }, 'policy.self_heal'],
    [{ ...ok, labels: { a: 1 } }, 'labels.a'],
    [{ ...ok, topology: { node_topology: {} } }, 'topology.node_topology'],
    // A misspelt constraint is refused: ignored, it would leave the volume placed anywhere.
    [{ ...ok, topology: { node: { Explicit: { allowed_nodes: ['n1'] } } } }, 'topology.node'],
    [
      { ...ok, topology: { node_topology: { explicit: { allowed_node: ['n1'] } } } },
      'topology.node_topology.explicit.allowed_node',
    ],
    [{ ...ok, topology: { node_topology: { explicit: {}, labelled: {} } } }, 'topology.node_topology'],
    [
      { ...ok, topology: { pool_topology: { labelled: { inclusions: { a: 'b' } } } } },
      'topology.pool_topology.labelled.inclusions',
    ],
    [{ ...ok, topology: { pool_topology: { label: {} } } }, 'topology.pool_topology.label'],
  ])('rejects %j naming %s', (body, field) => {
    const e = fieldError(() => createVolumeBody(body));
    expect(e.kind).toBe('InvalidArgument');
    expect(e.status).toBe(400);
    expect(e.message).toContain(`'${field}'`);
  });
  it('publish: nbd only, publish_context required', () => {
    expect(publishVolumeBody({ protocol: 'nbd', publish_context: {}, node: 'n1' }).node).toBe('n1');
    expect(fieldError(() => publishVolumeBody({ protocol: 'nvmf', publish_context: {} })).message).toContain(
      'protocol',
    );
    expect(fieldError(() => publishVolumeBody({ protocol: 'nbd' })).message).toContain('publish_context');
  });
  it('pools: one disk; ids are uuids', () => {
    expect(fieldError(() => createPoolBody({ disks: [] })).message).toContain('disks');
    expect(fieldError(() => uuidParam('nope', 'volume_id')).message).toContain('volume_id');
  });
});

describe('error model', () => {
  it('maps kinds to the HTTP status of docs/mayastor-compat.md §2.3', () => {
    expect(KIND_STATUS.NotFound).toBe(404);
    expect(KIND_STATUS.AlreadyExists).toBe(422);
    expect(KIND_STATUS.FailedPersist).toBe(507);
    expect(KIND_STATUS.AlreadyPublished).toBe(412);
    expect(KIND_STATUS.InUse).toBe(409);
    const engineError = (code: number) => new IoEngineError(code, 'said no', '127.0.0.1:1', 'CreatePool');
    expect(toSvcError(engineError(14))).toMatchObject({ kind: 'Unavailable', message: 'said no' });
    expect(toSvcError(engineError(8)).kind).toBe('ResourceExhausted');
    expect(toSvcError(engineError(2)).kind).toBe('Internal');
    expect(toSvcError(new StorctlError('X', 'gone', ExitCode.notFound)).kind).toBe('NotFound');
    expect(toSvcError(new StorctlError('X', 'slow', ExitCode.timeout)).kind).toBe('DeadlineExceeded');
    expect(toSvcError(new Error('x')).status).toBe(500);
  });
  it('a REST error becomes a CLI error with its kind, a next step and an exit code', () => {
    const e = new RestError('NotFound', 404, "volume 'x' not found", '', ['list volumes']);
    expect(e.message).toBe("NotFound: volume 'x' not found");
    expect(e.exitCode).toBe(3);
    expect(new RestError('AlreadyPublished', 412, 'm', '', []).exitCode).toBe(4);
  });
});

describe('router', () => {
  it('matches params, label key=value segments, and reports unknown paths', async () => {
    const r = new Router();
    const h = async () => ({ status: 200 });
    r.add('PUT', '/nodes/:node_id/label/:key=:value', h).add('GET', '/volumes/:volume_id', h);
    expect(r.match('PUT', '/nodes/n1/label/zone=a').params).toEqual({
      node_id: 'n1',
      key: 'zone',
      value: 'a',
    });
    expect(r.match('GET', '/volumes/abc').params).toEqual({ volume_id: 'abc' });
    expect(() => r.match('GET', '/nope')).toThrow(/no such endpoint/);
    expect(() => r.match('DELETE', '/volumes/abc')).toThrow(/not allowed/);
    // A malformed %-escape is the caller's error (400 InvalidArgument), never a 500.
    const err = fieldError(() => r.match('GET', '/volumes/%E0%A4%A'));
    expect(err.kind).toBe('InvalidArgument');
    expect(err.message).toMatch(/malformed %-escape/);
  });
});

describe('labels', () => {
  it('accepts kubectl-mayastor label keys and values, refuses the rest naming the field', () => {
    expect(labelParam('openebs.io/created-by', 'key', { key: true })).toBe('openebs.io/created-by');
    expect(labelParam('zone-a', 'value')).toBe('zone-a');
    expect(fieldError(() => labelParam('a/b/c', 'key', { key: true })).message).toMatch(/'key'/);
    expect(fieldError(() => labelParam('-bad', 'value')).message).toMatch(/'value'/);
    expect(fieldError(() => labelParam('x'.repeat(64), 'label')).message).toMatch(/'label'/);
  });
});
