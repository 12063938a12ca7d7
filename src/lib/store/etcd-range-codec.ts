/**
 * etcd's Range RPC on the wire (etcdserverpb.RangeRequest / RangeResponse / mvccpb.KeyValue), for
 * big listings: a page stays the bytes etcd sent until the thread that validates it decodes only
 * each key and value. etcd3's generic decoding builds an object per key and turns its four int64
 * revisions into decimal strings, which a listing never reads (100k keys: ~0.4 s of the main
 * thread's CPU). Field numbers: node_modules/etcd3/proto/rpc.proto and kv.proto.
 */

/** Wire types of protobuf's encoding. */
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

/** RangeRequest: key = 1, range_end = 2, limit = 3, revision = 4. */
export function encodeRangeRequest(req: {
  key: Uint8Array;
  rangeEnd: Uint8Array;
  limit: number;
  revision?: number;
}): Uint8Array {
  const out: number[] = [];
  const bytesField = (field: number, b: Uint8Array) => {
    out.push((field << 3) | LENGTH_DELIMITED);
    pushVarint(out, b.length);
    for (const x of b) out.push(x);
  };
  bytesField(1, req.key);
  bytesField(2, req.rangeEnd);
  if (req.limit > 0) {
    out.push((3 << 3) | VARINT);
    pushVarint(out, req.limit);
  }
  if (req.revision !== undefined && req.revision > 0) {
    out.push((4 << 3) | VARINT);
    pushVarint(out, req.revision);
  }
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

/** RangeResponse: header = 1 (ResponseHeader: revision = 3), kvs = 2, more = 3, count = 4. */
export function summarizeRangeResponse(bytes: Uint8Array): RangeSummary {
  const b = asBuffer(bytes);
  const r = new Reader(b);
  const summary: RangeSummary = { n: 0, lastKey: undefined, more: false, count: 0, revision: 0 };
  let last: [number, number] | undefined;
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
        if (t >>> 3 === 3 && (t & 7) === VARINT) summary.revision = h.varint();
        else h.skip(t & 7);
      }
    } else if (field === 2 && wireType === LENGTH_DELIMITED) {
      last = r.span();
      summary.n++;
    } else if (field === 3 && wireType === VARINT) summary.more = r.varint() !== 0;
    else if (field === 4 && wireType === VARINT) summary.count = r.varint();
    else r.skip(wireType);
  }
  if (last) summary.lastKey = decodeKeyValue(b, last).key;
  return summary;
}

/** mvccpb.KeyValue: key = 1, value = 5 (the revisions, version and lease are skipped). */
function decodeKeyValue(b: Buffer, [start, end]: [number, number]): { key: string; value: string } {
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
    else r.skip(wireType);
  }
  return { key, value };
}

/** Every key and value of a RangeResponse, in order. */
export function decodeRangeKvs(bytes: Uint8Array): { keys: string[]; values: string[] } {
  const b = asBuffer(bytes);
  const r = new Reader(b);
  const keys: string[] = [];
  const values: string[] = [];
  while (r.pos < r.end) {
    const tag = r.varint();
    if (tag >>> 3 === 2 && (tag & 7) === LENGTH_DELIMITED) {
      const kv = decodeKeyValue(b, r.span());
      keys.push(kv.key);
      values.push(kv.value);
    } else r.skip(tag & 7);
  }
  return { keys, values };
}
