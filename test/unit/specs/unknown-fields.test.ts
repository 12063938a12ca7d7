import { describe, expect, it } from 'vitest';
import {
  nexusSpec,
  nodeSpec,
  plainCopy,
  poolSpec,
  replicaSpec,
  unknownFields,
  volumeSpec,
} from '../../../src/lib/specs/index.js';
import { fixtures, ids, nexusReference, replicaReference, volumeReference } from './fixtures.js';

const key = `/openebs.io/mayastor/apis/v0/clusters/c/namespaces/n/VolumeSpec/${ids.volume}`;

/** Insert `text` right after the first occurrence of `after`. */
function insertAfter(json: string, after: string, text: string): string {
  const i = json.indexOf(after);
  if (i < 0) throw new Error(`'${after}' not in fixture`);
  return json.slice(0, i + after.length) + text + json.slice(i + after.length);
}

describe('fields storctl does not model survive a decode/encode round trip', () => {
  const cases = [
    {
      name: 'top-level field between known ones (a future Mayastor field)',
      json: insertAfter(volumeReference, '"thin":true,', '"future_flag":{"nested":[1,2,{"x":null}]},'),
    },
    { name: 'top-level field first', json: `{"zz_first":"a",${volumeReference.slice(1)}` },
    { name: 'top-level field last', json: `${volumeReference.slice(0, -1)},"zz_last":18446744073709551615}` },
    {
      name: 'field nested in target.config',
      json: insertAfter(volumeReference, '"reservationType":"ExclusiveAccess",', '"hostId":"abc",'),
    },
    {
      name: 'field nested in a host ACL entry inside a list',
      json: insertAfter(volumeReference, '"node_name":"node-2",', '"weight":3,'),
    },
    {
      name: 'old field (volume_group) of an older release',
      json: insertAfter(volumeReference, '"publish_context":{"ioTimeout":"30"},', '"volume_group":null,'),
    },
    {
      name: 'key named __proto__',
      json: insertAfter(volumeReference, '"thin":true,', '"__proto__":{"polluted":true},'),
    },
  ];

  it.each(cases)('$name', ({ json }) => {
    const v = volumeSpec.decode(key, json);
    expect(volumeSpec.encode(v)).toBe(json);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('lists the unmodelled fields of a decoded value', () => {
    const v = volumeSpec.decode(key, cases[0].json);
    expect(unknownFields(v)).toEqual({ future_flag: { nested: [1, 2, { x: null }] } });
    expect(unknownFields(volumeSpec.decode(key, volumeReference))).toEqual({});
    const big = volumeSpec.decode(key, `${volumeReference.slice(0, -1)},"zz":[18446744073709551615,"x"]}`);
    expect(unknownFields(big)).toEqual({ zz: [18446744073709551615n, 'x'] });
  });

  it('keeps unknown fields through a spread-and-modify update (how the core edits specs)', () => {
    const json = insertAfter(volumeReference, '"thin":true,', '"future_flag":7,');
    const v = volumeSpec.decode(key, json);
    const updated = {
      ...v,
      status: 'Deleting' as const,
      operation: { operation: 'Destroy' as const, result: null },
    };
    expect(volumeSpec.encode(updated)).toBe(
      json
        .replace('"status":{"Created":"Online"}', '"status":"Deleting"')
        .replace('"operation":null', '"operation":{"operation":"Destroy","result":null}'),
    );
  });

  it('puts a newly set optional field right after the known field Mayastor writes before it', () => {
    const json = insertAfter(volumeReference, '"thin":true,', '"future_flag":7,');
    const v = volumeSpec.decode(key, json);
    const out = volumeSpec.encode({
      ...v,
      content_source: { Snapshot: [ids.snapshot, ids.volume2] },
      max_snapshots: 4,
    });
    expect(out).toBe(
      `${json
        .replace(
          '"thin":true,',
          `"thin":true,"content_source":{"Snapshot":["${ids.snapshot}","${ids.volume2}"]},`,
        )
        .slice(0, -1)},"max_snapshots":4}`,
    );
  });

  it('drops a known optional field once it is cleared, keeping the unknown ones', () => {
    const fixture = fixtures.find((f) => f.name.startsWith('VolumeSpec with restore'))!;
    const json = `${fixture.json.slice(0, -1)},"extra":true}`;
    const v = volumeSpec.decode(fixture.key, json);
    const { max_snapshots: _drop, ...rest } = v;
    expect(volumeSpec.encode(rest)).toBe(json.replace(',"max_snapshots":10', ''));
  });

  it('other record types keep unknown fields too', () => {
    const r = insertAfter(replicaReference, '"managed":true,', '"new_thing":[],');
    expect(replicaSpec.encode(replicaSpec.decode('k', r))).toBe(r);
    const n = insertAfter(
      nexusReference,
      `"share_uri":"bdev:///${ids.child1}?uuid=${ids.child1}"`,
      ',"state":"Online"',
    );
    expect(nexusSpec.encode(nexusSpec.decode('k', n))).toBe(n);
    const node = '{"id":"n","endpoint":"10.0.0.1:10124","mystery":{"a":1},"version":"v2.8.0"}';
    expect(nodeSpec.encode(nodeSpec.decode('k', node))).toBe(node);
  });

  it('plainCopy drops the stored layout: equal to a value built in code, written in Mayastor order', () => {
    const json = '{"id":"p","node":"n","zz":1,"disks":[],"status":"Creating","labels":null,"operation":null}';
    const copy = plainCopy(poolSpec.decode('k', json));
    expect(copy).toEqual({
      node: 'n',
      id: 'p',
      disks: [],
      status: 'Creating',
      labels: null,
      operation: null,
    });
    expect(poolSpec.encode(copy)).toBe(
      '{"node":"n","id":"p","disks":[],"status":"Creating","labels":null,"operation":null}',
    );
  });
});
