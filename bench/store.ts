/**
 * Store throughput: put and compare-and-swap (create-if-absent guard + put) rates, sequential and
 * 64 in flight, each beside its peer measured in the same rounds, alternating:
 * - etcd backend: the raw etcd3 client against the same etcd (`put`, and `if(key, Create == 0)
 *   then put` for CAS);
 * - embedded backend: raw SQLite with the store's own settings (bench/raw-sqlite.ts: WAL,
 *   synchronous=NORMAL, an fsync of the WAL shared by concurrent commits before each
 *   acknowledgement), one-put and create-if-absent transactions, in the same directory.
 * Then `storctl get volumes -o json` wall time and peak RSS (GNU time, Debian package `time`) with
 * seeded VolumeSpecs on both backends. Every bar is a pass/fail field (`bars[].met`): each rate at
 * least 0.8 of its peer's; 100k volumes listed in under 3000 ms and 500 MB (null when 100k was not
 * in the run). Starts its own etcd (Debian etcd-server) and SQLite file. Prints JSON. Run after
 * `npm run build`:
 *   npx tsx bench/store.ts [count] [rounds] [listing sizes, e.g. 10000,100000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import {
  measurePutRate,
  measureRate,
  measureRawTxnRate,
  type RateResult,
} from '../src/lib/store/bench-util.js';
import { openStore } from '../src/lib/store/open.js';
import { startEtcd } from '../test/helpers/etcd.js';
import { seedVolumes, timeGetVolumes } from './get-volumes.js';
import { RawSqlite } from './raw-sqlite.js';

const count = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 3);
const listingSizes = (process.argv[4] ?? '10000,100000').split(',').map(Number);
const value = JSON.stringify({ bench: true, pad: 'x'.repeat(200) });
/** Each store operation's rate must be at least this fraction of its peer's. */
const PEER_BAR = 0.8;
const LISTING_BAR = { volumes: 100_000, wall_ms: 3000, peak_rss_mb: 500 };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Median rate over `rounds` runs; sides measured in the same round run back to back, in reverse
 * order every other round (a peer is not always the one measured first).
 */
async function medianRates(
  sides: Record<string, () => Promise<RateResult>>,
): Promise<Record<string, number>> {
  const seen: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    const order = Object.entries(sides);
    if (r % 2 === 1) order.reverse();
    for (const [name, run] of order) {
      seen[name] = [...(seen[name] ?? []), (await run()).perSecond];
    }
  }
  return Object.fromEntries(Object.entries(seen).map(([k, v]) => [k, median(v)]));
}

async function main() {
  const etcd = await startEtcd();
  const dir = mkdtempSync(join(tmpdir(), 'storctl-bench-'));
  const raw = new Etcd3({ hosts: etcd.clientUrl });
  let round = 0;
  const rawEtcd = (op: 'put' | 'cas', inFlight: number) => async () => {
    const prefix = `/storctl-bench/raw-${op}/${round++}/`;
    const r = await measureRate(count, inFlight, async (i) => {
      const key = `${prefix}${i}`;
      if (op === 'put') return raw.put(key).value(value).exec();
      const res = await raw.if(key, 'Create', '==', 0).then(raw.put(key).value(value)).commit();
      if (!res.succeeded) throw new Error(`raw etcd3 txn on fresh key ${key} failed its compare`);
    });
    await raw.delete().prefix(prefix).exec();
    return r;
  };
  // One raw database for the whole run, as the embedded store is one file; emptied after each round.
  const rawDb = await RawSqlite.open(join(dir, 'raw.db'));
  const rawSqlite = (op: 'put' | 'cas', inFlight: number) => async () => {
    try {
      return await measureRate(count, inFlight, async (i) => {
        if (op === 'put') return rawDb.put(`/storctl-bench/raw/${i}`, value);
        if (!(await rawDb.createIfAbsent(`/storctl-bench/raw/${i}`, value)))
          throw new Error(`raw SQLite create-if-absent of fresh key ${i} failed`);
      });
    } finally {
      rawDb.clear();
    }
  };
  try {
    const etcdStore = await openStore(etcd.url);
    const embedded = await openStore(`sqlite:${join(dir, 'store.db')}`);
    const result: Record<string, Record<string, number>> = {
      raw_etcd3: {},
      etcd: {},
      raw_sqlite_store_settings: {},
      embedded: {},
    };
    for (const inFlight of [1, 64]) {
      const rates = await medianRates({
        raw_etcd3_put: rawEtcd('put', inFlight),
        etcd_put: () => measurePutRate(etcdStore, { count, inFlight }),
        raw_etcd3_cas: rawEtcd('cas', inFlight),
        etcd_cas: () => measureRawTxnRate(etcdStore, { count, inFlight }),
        raw_sqlite_put: rawSqlite('put', inFlight),
        embedded_put: () => measurePutRate(embedded, { count, inFlight }),
        raw_sqlite_cas: rawSqlite('cas', inFlight),
        embedded_cas: () => measureRawTxnRate(embedded, { count, inFlight }),
      });
      result.raw_etcd3[`put_${inFlight}`] = rates.raw_etcd3_put;
      result.etcd[`put_${inFlight}`] = rates.etcd_put;
      result.raw_etcd3[`cas_txn_${inFlight}`] = rates.raw_etcd3_cas;
      result.etcd[`cas_txn_${inFlight}`] = rates.etcd_cas;
      result.raw_sqlite_store_settings[`put_${inFlight}`] = rates.raw_sqlite_put;
      result.embedded[`put_${inFlight}`] = rates.embedded_put;
      result.raw_sqlite_store_settings[`cas_txn_${inFlight}`] = rates.raw_sqlite_cas;
      result.embedded[`cas_txn_${inFlight}`] = rates.embedded_cas;
    }
    // `get volumes -o json` with N seeded volumes, each size in its own cluster id of the same store.
    const listing: Record<string, Record<string, { wall_ms: number; peak_rss_mb: number }>> = {
      etcd: {},
      embedded: {},
    };
    for (const [name, store, url] of [
      ['etcd', etcdStore, etcd.url],
      ['embedded', embedded, `sqlite:${join(dir, 'store.db')}`],
    ] as const) {
      for (const n of listingSizes) {
        const space = { clusterId: `bench-${n}`, namespace: 'default' };
        await seedVolumes(store, space, n);
        listing[name][`volumes_${n}`] = await timeGetVolumes(url, space.clusterId);
      }
    }
    await etcdStore.close();
    await embedded.close();

    const ratios: Record<string, Record<string, number>> = {
      etcd_vs_raw_etcd3: {},
      embedded_vs_raw_sqlite: {},
    };
    const bars: { bar: string; value: number | null; met: boolean | null }[] = [];
    for (const [ours, peer, name] of [
      ['etcd', 'raw_etcd3', 'etcd_vs_raw_etcd3'],
      ['embedded', 'raw_sqlite_store_settings', 'embedded_vs_raw_sqlite'],
    ] as const) {
      for (const k of Object.keys(result[ours])) {
        const r = Math.round((result[ours][k] / result[peer][k]) * 100) / 100;
        ratios[name][k] = r;
        bars.push({ bar: `${ours} ${k} >= ${PEER_BAR} x ${peer} ${k}`, value: r, met: r >= PEER_BAR });
      }
    }
    for (const name of ['etcd', 'embedded'] as const) {
      const m = listing[name][`volumes_${LISTING_BAR.volumes}`];
      bars.push({
        bar: `${name}: get volumes -o json over ${LISTING_BAR.volumes} volumes < ${LISTING_BAR.wall_ms} ms wall`,
        value: m?.wall_ms ?? null,
        met: m ? m.wall_ms < LISTING_BAR.wall_ms : null,
      });
      bars.push({
        bar: `${name}: get volumes -o json over ${LISTING_BAR.volumes} volumes < ${LISTING_BAR.peak_rss_mb} MB peak RSS`,
        value: m?.peak_rss_mb ?? null,
        met: m ? m.peak_rss_mb < LISTING_BAR.peak_rss_mb : null,
      });
    }
    console.log(
      JSON.stringify(
        {
          benchmark: 'store',
          command: `npx tsx bench/store.ts ${count} ${rounds} ${listingSizes.join(',')}`,
          count,
          rounds,
          unit: 'operations per second (median of rounds)',
          ...result,
          ratios,
          get_volumes_json: listing,
          bars,
          all_bars_met: bars.every((b) => b.met === true),
        },
        null,
        2,
      ),
    );
  } finally {
    raw.close();
    await rawDb.close();
    await etcd.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
