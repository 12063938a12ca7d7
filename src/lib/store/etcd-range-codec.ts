import type { KeyValue } from './types.js';

/**
 * etcd's Range RPC on the wire (etcdserverpb.RangeRequest / RangeResponse / mvccpb.KeyValue): the
 * etcd store's reads decode it here, and a listing's page stays the bytes etcd sent until the
 * thread that validates it decodes only each key and value. etcd3's generic decoding built an
 * object per key and turned its four int64 revisions into decimal strings (100k keys: ~0.4 s of
 * CPU), and loading it parses its .proto files at every CLI start. Field numbers:
 * node_modules/etcd3/proto/rpc.proto and kv.proto.
 */

/** Wire types of protobuf's encoding. */
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

/** RangeRequest: key = 1, range_end = 2 (absent: the key alone), limit = 3, revision = 4, count_only = 9. */
export function encodeRangeRequest(req: {
  key: Uint8Array;
  rangeEnd?: Uint8Array;
  limit?: number;
  revision?: number;
  /** count_only = 9: the header (revision) and count, no keys. */
  countOnly?: boolean;
}): Uint8Array {
  const out: number[] = [];
  const bytesField = (field: number, b: Uint8Array) => {
    out.push((field << 3) | LENGTH_DELIMITED);
    pushVarint(out, b.length);
    for (const x of b) out.push(x);
  };
  bytesField(1, req.key);
  if (req.rangeEnd) bytesField(2, req.rangeEnd);
  if (req.limit !== undefined && req.limit > 0) {
    out.push((3 << 3) | VARINT);
    pushVarint(out, req.limit);
  }
  if (req.revision !== undefined && req.revision > 0) {
    out.push((4 << 3) | VARINT);
    pushVarint(out, req.revision);
  }
  if (req.countOnly) out.push((9 << 3) | VARINT, 1);
  return Uint8Array.from(out);
}

function pushVarint(out: number[], n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a varint: ${n}`);
  while (n > 127) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

/** What a page's reader needs of a RangeResponse without decoding its keys and values. */
export interface RangeSummary {
  /** Key-values in this response. */
  n: number;
  /** The last key of this response (where the next page starts after), if any. */
  lastKey: string | undefined;
  more: boolean;
  /** Keys in the whole requested range. */
  count: number;
  revision: number;
}

/** A cursor over protobuf bytes; numbers above 2^53 lose precision (revisions and counts never get there). */
class Reader {
  pos = 0;
  constructor(
    readonly b: Uint8Array,
    readonly end = b.length,
  ) {}

  varint(): number {
    let x = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw truncated();
      const c = this.b[this.pos++];
      x += (c & 127) * scale;
      if (c < 128) return x;
      scale *= 128;
    }
    throw new Error('etcd Range response: a varint longer than 10 bytes');
  }

  /** A varint of up to 64 bits, exactly, as lowercase hex (lease ids use all 64). */
  varintHex(): string {
    let x = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (this.pos >= this.end) throw truncated();
      const c = this.b[this.pos++];
      x |= BigInt(c & 127) << shift;
      if (c < 128) return BigInt.asUintN(64, x).toString(16);
    }
    throw new Error('etcd Range response: a varint longer than 10 bytes');
  }

  /** [start, end) of a length-delimited field's bytes. */
  span(): [number, number] {
    const len = this.varint();
    const start = this.pos;
    this.pos += len;
    if (this.pos > this.end) throw truncated();
    return [start, this.pos];
  }

  skip(wireType: number): void {
    if (wireType === VARINT) this.varint();
    else if (wireType === LENGTH_DELIMITED) this.span();
    else if (wireType === FIXED64) this.pos += 8;
    else if (wireType === FIXED32) this.pos += 4;
    else throw new Error(`etcd Range response: unexpected wire type ${wireType}`);
    if (this.pos > this.end) throw truncated();
  }
}

const truncated = () => new Error('etcd Range response: truncated');
const asBuffer = (b: Uint8Array) =>
  Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const text = (b: Buffer, [start, end]: [number, number]) => b.toString('utf8', start, end);

/**
 * Walk a RangeResponse (header = 1 (ResponseHeader: revision = 3), kvs = 2, more = 3, count = 4),
 * handing each KeyValue's byte span to `onKv`.
 */
function walkRangeResponse(
  b: Buffer,
  onKv: (span: [number, number]) => void,
): { more: boolean; count: number; revision: number } {
  const r = new Reader(b);
  const top = { more: false, count: 0, revision: 0 };
  while (r.pos < r.end) {
    const tag = r.varint();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === LENGTH_DELIMITED) {
      const [start, end] = r.span();
      const h = new Reader(b, end);
      h.pos = start;
      while (h.pos < h.end) {
        const t = h.varint();
        if (t >>> 3 === 3 && (t & 7) === VARINT) top.revision = h.varint();
        else h.skip(t & 7);
      }
    } else if (field === 2 && wireType === LENGTH_DELIMITED) onKv(r.span());
    else if (field === 3 && wireType === VARINT) top.more = r.varint() !== 0;
    else if (field === 4 && wireType === VARINT) top.count = r.varint();
    else r.skip(wireType);
  }
  return top;
}

/** A page's count, more flag, revision and last key, its other keys and values left encoded. */
export function summarizeRangeResponse(bytes: Uint8Array): RangeSummary {
  const b = asBuffer(bytes);
  let n = 0;
  let last: [number, number] | undefined;
  const top = walkRangeResponse(b, (span) => {
    last = span;
    n++;
  });
  return { n, lastKey: last && decodeKeyValue(b, last).key, ...top };
}

/**
 * mvccpb.KeyValue: key = 1, create_revision = 2, mod_revision = 3, version = 4, value = 5,
 * lease = 6. Without `kv`, only the key and value are read (a listing's validation needs no more).
 */
function decodeKeyValue(
  b: Buffer,
  [start, end]: [number, number],
  kv?: KeyValue,
): { key: string; value: string } {
  const r = new Reader(b, end);
  r.pos = start;
  let key = '';
  let value = '';
  while (r.pos < r.end) {
    const tag = r.varint();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === LENGTH_DELIMITED) key = text(b, r.span());
    else if (field === 5 && wireType === LENGTH_DELIMITED) value = text(b, r.span());
    else if (kv && wireType === VARINT && field >= 2 && field <= 4) {
      const n = r.varint();
      if (field === 2) kv.createRevision = n;
      else if (field === 3) kv.modRevision = n;
      else kv.version = n;
    } else if (kv && field === 6 && wireType === VARINT) kv.lease = r.varintHex();
    else r.skip(wireType);
  }
  return { key, value };
}

/** Every key and value of a RangeResponse, in order. */
export function decodeRangeKvs(bytes: Uint8Array): { keys: string[]; values: string[] } {
  const b = asBuffer(bytes);
  const keys: string[] = [];
  const values: string[] = [];
  walkRangeResponse(b, (span) => {
    const kv = decodeKeyValue(b, span);
    keys.push(kv.key);
    values.push(kv.value);
  });
  return { keys, values };
}

/** A whole RangeResponse as the Store contract returns it. */
export function decodeRangeResponse(bytes: Uint8Array): {
  kvs: KeyValue[];
  more: boolean;
  count: number;
  revision: number;
} {
  const b = asBuffer(bytes);
  const kvs: KeyValue[] = [];
  const top = walkRangeResponse(b, (span) => {
    const kv: KeyValue = { key: '', value: '', createRevision: 0, modRevision: 0, version: 0, lease: '0' };
    const { key, value } = decodeKeyValue(b, span, kv);
    kv.key = key;
    kv.value = value;
    kvs.push(kv);
  });
  return { kvs, ...top };
}
