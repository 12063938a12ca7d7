/**
 * Store throughput: put and compare-and-swap rates (sequential and 64 in flight) for both backends,
 * next to the raw etcd3 client's put rate against the same etcd in the same run (the limit the etcd
 * backend is held to); then `storctl get volumes -o json` wall time and peak RSS with 10k and 100k
 * seeded VolumeSpecs on both backends (bar: 100k under 3 s and 500 MB). Starts its own etcd
 * (Debian etcd-server) and SQLite file. Prints JSON. Run after `npm run build`:
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

const count = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 3);
const listingSizes = (process.argv[4] ?? '10000,100000').split(',').map(Number);
const value = JSON.stringify({ bench: true, pad: 'x'.repeat(200) });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median rate over `rounds` runs; sides measured in the same round run back to back. */
async function medianRates(
  sides: Record<string, () => Promise<RateResult>>,
): Promise<Record<string, number>> {
  const seen: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(sides)) {
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
  const rawPut = (inFlight: number) => async () => {
    const prefix = `/storctl-bench/raw/${round++}/`;
    const r = await measureRate(count, inFlight, (i) => raw.put(`${prefix}${i}`).value(value).exec());
    await raw.delete().prefix(prefix).exec();
    return r;
  };
  try {
    const etcdStore = await openStore(etcd.url);
    const embedded = await openStore(`sqlite:${join(dir, 'store.db')}`);
    const result: Record<string, Record<string, number>> = { raw_etcd3: {}, etcd: {}, embedded: {} };
    for (const inFlight of [1, 64]) {
      const puts = await medianRates({
        raw: rawPut(inFlight),
        etcd: () => measurePutRate(etcdStore, { count, inFlight }),
      });
      result.raw_etcd3[`put_${inFlight}`] = puts.raw;
      result.etcd[`put_${inFlight}`] = puts.etcd;
      result.etcd[`cas_txn_${inFlight}`] = (
        await medianRates({ etcd: () => measureRawTxnRate(etcdStore, { count, inFlight }) })
      ).etcd;
      const emb = await medianRates({
        put: () => measurePutRate(embedded, { count, inFlight }),
        cas: () => measureRawTxnRate(embedded, { count, inFlight }),
      });
      result.embedded[`put_${inFlight}`] = emb.put;
      result.embedded[`cas_txn_${inFlight}`] = emb.cas;
    }
    // `get volumes -o json` with N seeded volumes, each size in its own cluster id of the same store.
    const listing: Record<string, Record<string, unknown>> = { etcd: {}, embedded: {} };
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
    const ratio = (k: string) => Math.round((result.etcd[k] / result.raw_etcd3[k]) * 100) / 100;
    console.log(
      JSON.stringify(
        {
          benchmark: 'store',
          count,
          rounds,
          unit: 'operations per second (median of rounds)',
          ...result,
          etcd_put_vs_raw: { put_1: ratio('put_1'), put_64: ratio('put_64') },
          get_volumes_json: listing,
          bars: [
            'etcd store put rate >= 0.8 x raw etcd3',
            '100k volumes listed in < 3000 ms wall and < 500 MB peak RSS',
          ],
        },
        null,
        2,
      ),
    );
  } finally {
    raw.close();
    await etcd.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
