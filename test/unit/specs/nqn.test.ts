import { describe, expect, it } from 'vitest';
import { frontendNodeParam, publishVolumeBody } from '../../../src/daemons/core/rest/validate.js';
import type { SvcError } from '../../../src/daemons/core/svc-error.js';
import { DecodeError } from '../../../src/lib/errors.js';
import { nodeSpec } from '../../../src/lib/specs/node.js';
import { nqnProblem, nvmeNqn } from '../../../src/lib/specs/nqn.js';
import { hostNqn, volumeSpec } from '../../../src/lib/specs/volume.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { withValue } from './edit.js';
import { ids, space, volumeReference } from './fixtures.js';

/** Upstream's own cases (`validate_nvme_nqn` in stor-port's nvme_nqn.rs), each with its verdict. */
describe("HostNqn: the NQNs Mayastor's deserializer accepts", () => {
  const base = 'nqn.2014-08.org.borg.long:';
  it.each([
    'nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555',
    'nqn.2014-08.borg.nvmexpress:uuid:11122111-2222-3333-4444-555555555555',
    'nqn.2011-11.borg:disk1',
    'nqn.2011-11.com.test:uuid:disk1',
    `${base}${'a'.repeat(223 - base.length)}`,
    `nqn.2014-08.${'a'.repeat(63)}:name`,
    hostNqn('node-2'),
  ])('accepts %s', (nqn) => {
    expect(nqnProblem(nqn)).toBeNull();
    expect(nvmeNqn.decode(nqn)).toBe(nqn);
  });

  it.each([
    ['nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-5555555555555', /not followed by a uuid/],
    ['nqn.201-11.borg:11111111-2222-3333-4444-555555555555', /no 'yyyy-mm' date/],
    ['nqn.201408.nqn.org.borg:11111111-2222-3333-4444-555555555555', /no 'yyyy-mm' date/],
    ['nqn.2014-a8.nqn.org.borg::11111111-2222-3333-4444-555555555555', /an invalid 'yyyy-mm' date/],
    ['nqn.2014-08.nqn.org.borg:', /no ':<name>'/],
    ['nqn.2014-08.:a', /no domain/],
    ['nqn.2014-08-org.borg:disk1', /no '\.' after the 'yyyy-mm' date/],
    ['', /shorter than 11 bytes/],
    [`${base}${'a'.repeat(224 - base.length)}`, /longer than 223 bytes/],
    [`nqn.2014-08.${'a'.repeat(64)}:name`, /a domain longer than 63 bytes/],
    ['node-name:worker-2', /no 'nqn\.' prefix/],
    [`storctl:${ids.volume}`, /no 'nqn\.' prefix/],
  ])('refuses %s', (nqn, why) => {
    expect(nqnProblem(nqn)).toMatch(why);
    expect(() => nvmeNqn.decode(nqn)).toThrow(why);
  });
});

describe('VolumeSpec frontend.host_acl[].node_nqn is a HostNqn', () => {
  const key = objectKey(space, 'VolumeSpec', ids.volume);
  const path = ['target', 'frontend', 'host_acl', 0, 'node_nqn'];

  it('decodes the reference value and a node NQN storctl builds', () => {
    expect(volumeSpec.decode(key, volumeReference).target?.frontend.host_acl[0].node_nqn).toBe(
      'nqn.2019-05.io.openebs:node-name:node-2',
    );
    const built = withValue(volumeReference, path, hostNqn('worker-7'));
    expect(volumeSpec.decode(key, built).target?.frontend.host_acl[0].node_nqn).toBe(hostNqn('worker-7'));
  });

  it('refuses a node_nqn without the nqn. prefix with a DecodeError naming key and field', () => {
    let err: unknown;
    try {
      volumeSpec.decode(key, withValue(volumeReference, path, 'node-name:worker-2'));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DecodeError);
    const d = err as DecodeError;
    expect(d.key).toBe(key);
    expect(d.field).toBe('target.frontend.host_acl[0].node_nqn');
    expect(d.message).toContain(
      `cannot decode ${key}: field 'target.frontend.host_acl[0].node_nqn' expected an NVMe NQN`,
    );
    expect(d.message).toMatch(/got "node-name:worker-2": no 'nqn\.' prefix/);
  });
});

describe('NodeSpec node_nqn is an Option<HostNqn>', () => {
  it('reads an NQN or nothing, and refuses any other text naming the field', () => {
    const key = objectKey(space, 'NodeSpec', 'node-1');
    const json = (nqn?: string) =>
      JSON.stringify({
        id: 'node-1',
        endpoint: '10.0.0.1:10124',
        ...(nqn === undefined ? {} : { node_nqn: nqn }),
      });
    expect(nodeSpec.decode(key, json()).node_nqn).toBeUndefined();
    expect(nodeSpec.decode(key, json(hostNqn('node-1'))).node_nqn).toBe(hostNqn('node-1'));
    expect(() => nodeSpec.decode(key, json('node-1.example.com'))).toThrow(
      `cannot decode ${key}: field 'node_nqn' expected an NVMe NQN`,
    );
  });
});

describe('core never writes a host NQN it could not read back', () => {
  const refused = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return e as SvcError;
    }
    throw new Error('accepted');
  };

  it('accepts a frontend node whose host NQN fits 223 bytes and refuses a longer one, naming the field', () => {
    const longest = 'n'.repeat(223 - hostNqn('').length);
    expect(frontendNodeParam(longest, 'frontend_host')).toBe(longest);
    const e = refused(() => frontendNodeParam(`${longest}x`, 'frontend_host'));
    expect([e.kind, e.status]).toEqual(['InvalidArgument', 400]);
    expect(e.message).toMatch(/'frontend_host' is too long for a host NQN/);
    const p = refused(() =>
      publishVolumeBody({ protocol: 'nbd', publish_context: {}, frontend_node: `${longest}x` }),
    );
    expect(p.message).toMatch(/'frontend_node' is too long for a host NQN/);
  });
});
