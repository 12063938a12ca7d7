import { describe, expect, it } from 'vitest';
import {
  decodeRangeKvs,
  decodeRangeResponse,
  encodeRangeRequest,
  summarizeRangeResponse,
} from '../../../src/lib/store/etcd-range-codec.js';

/** Protobuf by hand, for the cases a real etcd never sends (tests/integration/store/pages.test.ts has those it does). */
const varint = (n: number): number[] => {
  const out: number[] = [];
  while (n > 127) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
};
const bytesField = (field: number, b: number[] | string) => {
  const body = typeof b === 'string' ? [...Buffer.from(b)] : b;
  return [(field << 3) | 2, ...varint(body.length), ...body];
};
const varintField = (field: number, n: number) => [field << 3, ...varint(n)];
const keyValue = (key: string, value: string, extra: number[] = []) =>
  bytesField(2, [
    ...bytesField(1, key),
    ...varintField(2, 2 ** 40 + 3), // create_revision beyond 32 bits
    ...varintField(3, 7),
    ...varintField(4, 1),
    ...extra,
    ...bytesField(5, value),
    ...varintField(6, 0x7fffffff),
  ]);

describe("etcd's Range on the wire", () => {
  const header = bytesField(1, [...varintField(1, 99), ...varintField(3, 2 ** 33), ...varintField(4, 2)]);

  it('summarizes a page without decoding its values, and decodes them where they are used', () => {
    const page = Uint8Array.from([
      ...header,
      ...keyValue('/p/a', '{"a":1}'),
      // A field this reader does not know (a fixed64 and a fixed32) is skipped.
      ...keyValue('/p/é', 'δ中', [(9 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8, (10 << 3) | 5, 1, 2, 3, 4]),
      ...keyValue('/p/empty', ''),
      ...varintField(3, 1),
      ...varintField(4, 12345),
    ]);
    expect(summarizeRangeResponse(page)).toEqual({
      n: 3,
      lastKey: '/p/empty',
      more: true,
      count: 12345,
      revision: 2 ** 33,
    });
    expect(decodeRangeKvs(page)).toEqual({
      keys: ['/p/a', '/p/é', '/p/empty'],
      values: ['{"a":1}', 'δ中', ''],
    });
    // A view into a larger buffer (as a worker or gRPC may hand it) reads the same.
    const inside = new Uint8Array(page.length + 10);
    inside.set(page, 5);
    expect(decodeRangeKvs(inside.subarray(5, 5 + page.length)).keys).toHaveLength(3);
  });

  it('decodes whole key-values as the store contract returns them, a 64-bit lease id exactly', () => {
    // 0x57caa21d0ac00115 (a lease id etcd handed out here) as a varint: beyond 2^53.
    let lease = 0x57caa21d0ac00115n;
    const leaseVarint: number[] = [];
    while (lease > 127n) {
      leaseVarint.push(Number(lease & 127n) | 128);
      lease >>= 7n;
    }
    leaseVarint.push(Number(lease));
    const page = Uint8Array.from([
      ...header,
      ...bytesField(2, [
        ...bytesField(1, '/lock/x'),
        ...varintField(2, 2 ** 40 + 3),
        ...varintField(3, 2 ** 40 + 9),
        ...varintField(4, 4),
        ...bytesField(5, ''),
        6 << 3,
        ...leaseVarint,
      ]),
      ...bytesField(2, bytesField(1, '/plain')),
      ...varintField(4, 2),
    ]);
    expect(decodeRangeResponse(page)).toEqual({
      kvs: [
        {
          key: '/lock/x',
          value: '',
          createRevision: 2 ** 40 + 3,
          modRevision: 2 ** 40 + 9,
          version: 4,
          lease: '57caa21d0ac00115',
        },
        { key: '/plain', value: '', createRevision: 0, modRevision: 0, version: 0, lease: '0' },
      ],
      more: false,
      count: 2,
      revision: 2 ** 33,
    });
  });

  it('an empty range is a page of none, with nothing more', () => {
    expect(summarizeRangeResponse(Uint8Array.from(header))).toEqual({
      n: 0,
      lastKey: undefined,
      more: false,
      count: 0,
      revision: 2 ** 33,
    });
    expect(decodeRangeKvs(new Uint8Array())).toEqual({ keys: [], values: [] });
  });

  it('a truncated or malformed response is an error, never a short page', () => {
    const page = [...header, ...keyValue('/p/a', 'value')];
    expect(() => summarizeRangeResponse(Uint8Array.from(page.slice(0, -3)))).toThrow(/truncated/);
    expect(() => decodeRangeKvs(Uint8Array.from(page.slice(0, -3)))).toThrow(/truncated/);
    expect(() => decodeRangeKvs(Uint8Array.from([(2 << 3) | 3]))).toThrow(/wire type 3/);
    expect(() => decodeRangeKvs(Uint8Array.from([0x80, 0x80]))).toThrow(/truncated/);
  });

  it('encodes the request fields etcd reads: key, range_end, limit, revision, count_only', () => {
    expect([
      ...encodeRangeRequest({ key: Buffer.from('a'), rangeEnd: Buffer.from('b'), limit: 300 }),
    ]).toEqual([...bytesField(1, 'a'), ...bytesField(2, 'b'), ...varintField(3, 300)]);
    expect([
      ...encodeRangeRequest({
        key: Buffer.from('a'),
        rangeEnd: Buffer.from([0]),
        limit: 0,
        revision: 2 ** 35,
      }),
    ]).toEqual([...bytesField(1, 'a'), ...bytesField(2, [0]), ...varintField(4, 2 ** 35)]);
    expect([...encodeRangeRequest({ key: Buffer.from('k'), countOnly: true })]).toEqual([
      ...bytesField(1, 'k'),
      ...varintField(9, 1),
    ]);
  });
});
