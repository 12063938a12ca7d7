import { describe, expect, it } from 'vitest';
import { DecodeError, ExitCode } from '../../../src/lib/errors.js';
import { codecFor, decodeRecord, volumeSpec } from '../../../src/lib/specs/index.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { withValue } from './edit.js';
import { fixtures, ids, space } from './fixtures.js';

function decodeError(fn: () => unknown): DecodeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof DecodeError) return err;
    throw err;
  }
  throw new Error('expected a DecodeError');
}

const fx = (prefix: string) => fixtures.find((f) => f.name.startsWith(prefix))!;
const dropKey = (json: string, name: string) => {
  const o = JSON.parse(json);
  delete o[name];
  return JSON.stringify(o);
};

describe('bad stored values give a DecodeError naming the key and the field', () => {
  it('matches the documented message for a bad status', () => {
    const key = objectKey(space, 'VolumeSpec', 'abc');
    const err = decodeError(() =>
      volumeSpec.decode(key, withValue(fx('VolumeSpec (real').json, ['status'], 42)),
    );
    expect(err.message).toBe(
      `cannot decode ${key}: field 'status' expected "Creating" | {"Created": …} | "Deleting" | "Deleted", got 42`,
    );
    expect(err.key).toBe(key);
    expect(err.field).toBe('status');
    expect(err.exitCode).toBe(ExitCode.corrupt);
    expect(err.code).toBe('DECODE_FAILED');
  });

  const cases: {
    name: string;
    fixture: string;
    json: (j: string) => string;
    field: string;
    detail: RegExp;
  }[] = [
    {
      name: 'invalid JSON',
      fixture: 'VolumeSpec (real',
      json: (j) => j.slice(0, 40),
      field: '<root>',
      detail: /is not valid JSON/,
    },
    { name: 'empty text', fixture: 'PoolSpec', json: () => '', field: '<root>', detail: /is not valid JSON/ },
    {
      name: 'JSON that is not an object',
      fixture: 'PoolSpec',
      json: () => '[1,2]',
      field: '<root>',
      detail: /expected an object \(PoolSpec\), got \[1,2\]/,
    },
    {
      name: 'missing required field',
      fixture: 'ReplicaSpec (test',
      json: (j) => dropKey(j, 'pool'),
      field: 'pool',
      detail: /is missing \(expected a pool name or \[pool name, pool uuid\]\)/,
    },
    {
      name: 'size as a string',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['size'], '5G'),
      field: 'size',
      detail: /expected an unsigned integer/,
    },
    {
      name: 'negative size',
      fixture: 'NexusSpec (test',
      json: (j) => withValue(j, ['size'], -1),
      field: 'size',
      detail: /got -1/,
    },
    {
      name: 'size beyond 2^53',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['size'], 2n ** 60n),
      field: 'size',
      detail: /u64 up to 2\^53-1.*got 1152921504606846976/,
    },
    {
      name: 'a string field holding a big integer',
      fixture: 'PoolSpec',
      json: (j) => withValue(j, ['node'], 12345678901234567890n),
      field: 'node',
      detail: /expected a string, got 12345678901234567890$/,
    },
    {
      name: 'reservation key beyond u64',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['target', 'config', 'reservationKey'], 2n ** 64n),
      field: 'target.config.reservationKey',
      detail: /got 18446744073709551616$/,
    },
    {
      name: 'num_replicas beyond u8',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['num_replicas'], 300),
      field: 'num_replicas',
      detail: /u8/,
    },
    {
      name: 'bad uuid',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['uuid'], 'abc'),
      field: 'uuid',
      detail: /expected a uuid, got "abc"/,
    },
    {
      name: 'nested: reservation key as string',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['target', 'config', 'reservationKey'], '1'),
      field: 'target.config.reservationKey',
      detail: /u64/,
    },
    {
      name: 'nested: controller id out of range',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['target', 'config', 'controllerIdRange', 'end'], 65520),
      field: 'target.config.controllerIdRange.end',
      detail: /1\.\.=65519/,
    },
    {
      name: 'in a list: host ACL entry',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['target', 'frontend', 'host_acl', 0, 'node_nqn'], 7),
      field: 'target.frontend.host_acl[0].node_nqn',
      detail: /expected a string, got 7/,
    },
    {
      name: 'in a list: second nexus child',
      fixture: 'NexusSpec (test',
      json: (j) => withValue(j, ['children', 1, 'Replica', 'uuid'], 'x'),
      field: 'children[1].Replica.uuid',
      detail: /expected a uuid/,
    },
    {
      name: 'inside Created',
      fixture: 'VolumeSpec (real',
      json: (j) => withValue(j, ['status'], { Created: 'online' }),
      field: 'status.Created',
      detail: /"Unknown" \| "Online"/,
    },
    {
      name: 'label value not a string',
      fixture: 'PoolSpec',
      json: (j) => withValue(j, ['labels', 'openebs.io/created-by'], 1),
      field: 'labels.openebs.io/created-by',
      detail: /expected a string/,
    },
    {
      name: 'snapshot transaction replica',
      fixture: 'VolumeSnapshot with',
      json: (j) => withValue(j, ['metadata', 'transactions', '1', 0, 'metadata', 'meta'], { Snapshot: {} }),
      field: 'metadata.transactions.1[0].metadata.meta',
      detail: /\{"Volume": …\}/,
    },
    {
      name: 'NexusInfo healthy not a bool',
      fixture: 'NexusInfo',
      json: (j) => withValue(j, ['children', 0, 'healthy'], 'yes'),
      field: 'children[0].healthy',
      detail: /expected true or false, got "yes"/,
    },
    {
      name: 'lease id not hex',
      fixture: 'StoreLeaseOwner',
      json: (j) => withValue(j, ['lease_id'], 'xyz'),
      field: 'lease_id',
      detail: /lease id in hex/,
    },
    {
      name: 'switchover volume',
      fixture: 'SwitchOver',
      json: (j) => dropKey(j, 'volume'),
      field: 'volume',
      detail: /is missing/,
    },
  ];

  it.each(cases)('$name → field $field', ({ fixture, json, field, detail }) => {
    const f = fx(fixture);
    const err = decodeError(() => codecFor(f.type)!.decode(f.key, json(f.json)));
    expect(err.key).toBe(f.key);
    expect(err.field).toBe(field);
    expect(err.message.startsWith(`cannot decode ${f.key}: field '${field}' `)).toBe(true);
    expect(err.message).toMatch(detail);
  });

  it('a value whose id differs from the key is refused by decodeRecord (unless told not to check)', () => {
    const f = fx('VolumeSpec (real');
    const key = objectKey(space, 'VolumeSpec', ids.volume2);
    const err = decodeError(() => decodeRecord(key, f.json));
    expect(err.field).toBe('uuid');
    expect(err.message).toContain(`is '${ids.volume}' but the key names '${ids.volume2}'`);
    expect(decodeRecord(key, f.json, { checkId: false })?.id).toBe(ids.volume2);
    const snap = fx('VolumeSnapshot with');
    expect(
      decodeError(() => decodeRecord(objectKey(space, 'VolumeSnapshot', ids.volume), snap.json)).field,
    ).toBe('spec.uuid');
  });

  it('decodeRecord returns null for keys outside the key space or types without a codec', () => {
    expect(decodeRecord('/other/key', '{}')).toBeNull();
    expect(decodeRecord(objectKey(space, 'StoreLeaseLock', 'CoreAgent/694d8a7f3c2b1e05'), '')).toBeNull();
    expect(decodeRecord(objectKey(space, 'ChildSpec', 'x'), '{}')).toBeNull();
  });
});
