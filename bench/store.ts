/**
 * Store throughput: put and compare-and-swap (create-if-absent guard + put) rates, sequential and
 * 64 in flight, each beside its peer measured in the same rounds, alternating:
 * - etcd backend: the raw etcd3 client against the same etcd (`put`, and `if(key, Create == 0)
 *   then put` for CAS);
 * - embedded backend: raw SQLite with the store's own settings (bench/raw-sqlite.ts: WAL,
 *   synchronous=NORMAL, an fsync of the WAL shared by concurrent commits before each
 *   acknowledgement), one-put and create-if-absent transactions, in the same directory.
 * Then listing: `storctl get volumes -o json` and `-o table` over seeded VolumeSpecs (published and
 * plain ones, every optional field present), each beside its peer on the same keys, `rounds` runs
 * each, alternating (peer first, then ours, reversed every other round): on etcd, `etcdctl get
 * --prefix -w json` (Debian etcd-client); on the embedded store, a raw read of the same rows with
 * better-sqlite3 in a bare node process printing the same JSON array. Wall time and peak RSS come
 * from GNU time (Debian package `time`); median and spread (min, max) of the runs.
 * Every bar is a ratio to a peer measured in the same run, as a pass/fail field (`bars[].met`): each
 * rate at least 0.8 of its peer's; over 100k volumes (null when 100k was not in the run) `-o json`
 * within 1.5x of the peer's wall time, `-o table` within 2x, each under 400 MB peak RSS. Starts
 * its own etcd (Debian etcd-server) and SQLite file. Prints JSON. Run after `npm run build`:
 *   npx tsx bench/store.ts [count] [rounds] [listing sizes, e.g. 10000,100000]
 * A count of 0 skips the rates (listing only).
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
import {
  type ListingRun,
  seedVolumes,
  timeEtcdctl,
  timeGetVolumes,
  timeRawSqliteRead,
} from './get-volumes.js';
import { RawSqlite } from './raw-sqlite.js';
import { median } from './stats.js';

const count = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 3);
const listingSizes = (process.argv[4] ?? '10000,100000').split(',').map(Number);
const value = JSON.stringify({ bench: true, pad: 'x'.repeat(200) });
/** Each store operation's rate must be at least this fraction of its peer's. */
const PEER_BAR = 0.8;
/** Over this many volumes: wall time at most `json`/`table` x the peer's, and peak RSS under this. */
const LISTING_BAR = { volumes: 100_000, json: 1.5, table: 2, peak_rss_mb: 400 };

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

interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number[];
}
type ListingSides = Record<'peer' | 'json' | 'table', { wall_ms: Spread; peak_rss_mb: Spread }> & {
  ratios: { json_vs_peer: number; table_vs_peer: number };
};

const spread = (runs: number[]): Spread => ({
  median: median(runs),
  min: Math.min(...runs),
  max: Math.max(...runs),
  runs,
});

/**
 * `rounds` runs of each side, alternating (peer, json, table; reversed every other round), after
 * one untimed run of each: right after seeding, every side ran slower the earlier it ran (the peer
 * 2.5 s, then 1.7 s, then 0.6 s) while the store and the page cache settled. Ratios are of median
 * wall times.
 */
async function listingRounds(sides: Record<'peer' | 'json' | 'table', () => Promise<ListingRun>>) {
  const seen: Record<string, ListingRun[]> = { peer: [], json: [], table: [] };
  for (const run of Object.values(sides)) await run();
  for (let r = 0; r < rounds; r++) {
    const order = Object.entries(sides);
    if (r % 2 === 1) order.reverse();
    for (const [name, run] of order) seen[name].push(await run());
  }
  const out = Object.fromEntries(
    Object.entries(seen).map(([k, v]) => [
      k,
      {
        wall_ms: spread(v.map((x) => x.wall_ms)),
        peak_rss_mb: spread(v.map((x) => x.peak_rss_mb)),
        output_mb: v[0].output_mb,
      },
    ]),
  ) as unknown as ListingSides;
  const ratio = (side: 'json' | 'table') =>
    Math.round((out[side].wall_ms.median / out.peer.wall_ms.median) * 100) / 100;
  out.ratios = { json_vs_peer: ratio('json'), table_vs_peer: ratio('table') };
  return out;
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
    for (const inFlight of count > 0 ? [1, 64] : []) {
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
    // Listing with N seeded volumes, each size in its own cluster id of the same store.
    const dbFile = join(dir, 'store.db');
    const listing: Record<string, Record<string, ListingSides>> = { etcd: {}, embedded: {} };
    for (const [name, store, url, peer] of [
      ['etcd', etcdStore, etcd.url, (id: string) => timeEtcdctl(etcd.clientUrl, id)],
      ['embedded', embedded, `sqlite:${dbFile}`, (id: string) => timeRawSqliteRead(dbFile, id)],
    ] as const) {
      for (const n of listingSizes) {
        const space = { clusterId: `bench-${n}`, namespace: 'default' };
        await seedVolumes(store, space, n);
        listing[name][`volumes_${n}`] = await listingRounds({
          peer: () => peer(space.clusterId),
          json: () => timeGetVolumes(url, space.clusterId, 'json'),
          table: () => timeGetVolumes(url, space.clusterId, 'table'),
        });
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
      const peerName = name === 'etcd' ? 'etcdctl get --prefix -w json' : 'raw better-sqlite3 read';
      const m = listing[name][`volumes_${LISTING_BAR.volumes}`];
      for (const side of ['json', 'table'] as const) {
        const ratio = m ? m.ratios[`${side}_vs_peer`] : null;
        bars.push({
          bar: `${name}: get volumes -o ${side} over ${LISTING_BAR.volumes} volumes, wall time <= ${LISTING_BAR[side]} x ${peerName}`,
          value: ratio,
          met: ratio === null ? null : ratio <= LISTING_BAR[side],
        });
        const rss = m ? m[side].peak_rss_mb.median : null;
        bars.push({
          bar: `${name}: get volumes -o ${side} over ${LISTING_BAR.volumes} volumes < ${LISTING_BAR.peak_rss_mb} MB peak RSS`,
          value: rss,
          met: rss === null ? null : rss < LISTING_BAR.peak_rss_mb,
        });
      }
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
          get_volumes: listing,
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
