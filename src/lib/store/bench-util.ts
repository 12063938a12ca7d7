import type { Store } from './types.js';

/** Store throughput probes shared by bench/store.ts and the core benchmark. */

export interface RateResult {
  ops: number;
  inFlight: number;
  seconds: number;
  perSecond: number;
}

export interface RateOptions {
  /** Operations to run (default 1000). */
  count?: number;
  /** Operations kept in flight at once (default 1: sequential). */
  inFlight?: number;
  /** Key prefix to write under; deleted afterwards. */
  prefix?: string;
}

async function measure(
  count: number,
  inFlight: number,
  op: (i: number) => Promise<unknown>,
): Promise<RateResult> {
  let next = 0;
  const start = process.hrtime.bigint();
  const lane = async () => {
    while (next < count) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(inFlight, count)) }, lane));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return {
    ops: count,
    inFlight,
    seconds: Math.round(seconds * 1000) / 1000,
    perSecond: Math.round(count / seconds),
  };
}

function benchPrefix(options: RateOptions, kind: string): string {
  return options.prefix ?? `/storctl-bench/${kind}/${process.pid}-${Date.now().toString(36)}/`;
}

/**
 * Rate of raw compare-and-swap transactions (create-if-absent guard + put, one new key each): the
 * ceiling for any layer that turns its writes into guarded transactions.
 */
export async function measureRawTxnRate(store: Store, options: RateOptions = {}): Promise<RateResult> {
  const prefix = benchPrefix(options, 'txn');
  const value = JSON.stringify({ bench: true, pad: 'x'.repeat(200) });
  try {
    return await measure(options.count ?? 1000, options.inFlight ?? 1, async (i) => {
      const key = `${prefix}${i}`;
      const r = await store.txn({
        compare: [{ key, target: 'mod', op: '==', value: 0 }],
        success: [{ type: 'put', key, value }],
      });
      if (!r.succeeded) throw new Error(`bench txn on fresh key ${key} failed its compare`);
    });
  } finally {
    await store.deletePrefix(prefix);
  }
}

/** Rate of plain puts, one new key each. */
export async function measurePutRate(store: Store, options: RateOptions = {}): Promise<RateResult> {
  const prefix = benchPrefix(options, 'put');
  const value = JSON.stringify({ bench: true, pad: 'x'.repeat(200) });
  try {
    return await measure(options.count ?? 1000, options.inFlight ?? 1, (i) =>
      store.put(`${prefix}${i}`, value),
    );
  } finally {
    await store.deletePrefix(prefix);
  }
}

/** The same loop around any async operation (e.g. the raw etcd3 client, for comparison). */
export function measureRate(
  count: number,
  inFlight: number,
  op: (i: number) => Promise<unknown>,
): Promise<RateResult> {
  return measure(count, inFlight, op);
}
