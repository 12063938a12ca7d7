import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nexusInfoKey, objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Lease, Store } from '../../../src/lib/store/types.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { runStorctl } from '../../helpers/storctl.js';
import { fixtureDump, ids, records, space } from './cluster-fixture.js';

/** vol1's table cells after its id: published on node-1, Degraded by its NexusInfo, no snapshots. */
const VOL1_CELLS = ['2', 'node-1', 'nbd', 'Degraded', '1GiB', 'false', '<none>', '0', '<none>'];

/** The `get`, `store dump` and `store load` commands, run as a user runs them, on both backends. */
function suite(name: string, setup: () => Promise<{ url: string; cleanup: () => Promise<void> }>) {
  describe(`storctl get / store (${name})`, () => {
    let url: string;
    let cleanup: () => Promise<void>;
    let store: Store;
    let lease: Lease;
    let tmp: string;
    const storctl = (...args: string[]) =>
      runStorctl([...args, '--store', url, '--cluster-id', space.clusterId, '--namespace', space.namespace]);

    beforeAll(async () => {
      // Made here, not at collection: a filtered run skips this suite's afterAll.
      tmp = mkdtempSync(join(tmpdir(), 'storctl-get-'));
      ({ url, cleanup } = await setup());
      store = await openStore(url);
      const dump = join(tmp, 'fixture.jsonl');
      writeFileSync(dump, fixtureDump());
      const load = await storctl('store', 'load', dump);
      expect(load.stderr).toBe('');
      expect(load.code).toBe(0);
      // The liveness key is lease-bound, as an io-engine keeps it.
      const [livenessKey, livenessValue] = records.find(([k]) => k.includes('/storctl/'))!;
      lease = await store.grantLease(30);
      await lease.put(livenessKey, livenessValue);
    });
    afterAll(async () => {
      await lease?.revoke();
      await store?.close();
      await cleanup?.();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    it('lists volumes with status refined by NexusInfo, sizes humanized, <none> for missing values', async () => {
      const r = await storctl('get', 'volumes');
      expect(r.code).toBe(0);
      const lines = r.stdout
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s{2,}|\s(?=\S)/));
      expect(r.stdout.split('\n')[0]).toMatch(
        /^\s*ID\s+REPLICAS\s+TARGET-NODE\s+ACCESSIBILITY\s+STATUS\s+SIZE\s+THIN-PROVISIONED\s+ALLOCATED\s+SNAPSHOTS\s+SOURCE$/,
      );
      const row1 = r.stdout.split('\n').find((l) => l.includes(ids.vol1))!;
      expect(row1.trim().split(/\s+/)).toEqual([ids.vol1, ...VOL1_CELLS]);
      const row2 = r.stdout.split('\n').find((l) => l.includes(ids.vol2))!;
      expect(row2).toMatch(/<none>\s+<none>\s+Online\s+5GiB\s+true \(snapped\)\s+<none>\s+1\s+<none>/);
      expect(lines.length).toBe(3);
    });

    it('takes a volume id in capitals, as core does', async () => {
      for (const cmd of [
        ['get', 'volume'],
        ['describe', 'volume'],
      ]) {
        const r = await storctl(...cmd, ids.vol1.toUpperCase());
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toContain(ids.vol1);
      }
    });

    it('prints each object as REST shows it with -o json, from the store alone while core is down', async () => {
      type Vol = { spec: { uuid: string; num_replicas: number; num_snapshots: number }; state?: unknown };
      const r = await storctl('get', 'volume', ids.vol1, '-o', 'json');
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      const one = JSON.parse(r.stdout);
      expect(one).toMatchObject({
        spec: {
          uuid: ids.vol1,
          num_replicas: 2,
          status: 'Created',
          target: { node: 'node-1', protocol: 'nbd' },
        },
      });
      expect(one).not.toHaveProperty('state');
      // The streamed listing (a worker presents each value) prints the very same objects.
      const all = await storctl('get', 'volumes', '-o', 'json');
      expect(all.code).toBe(0);
      expect(all.stderr).toBe('');
      const listed = JSON.parse(all.stdout) as Vol[];
      expect(listed.map((v) => v.spec.uuid).sort()).toEqual([ids.vol1, ids.vol2].sort());
      expect(listed.find((v) => v.spec.uuid === ids.vol1)).toEqual(one);
      expect(listed.find((v) => v.spec.uuid === ids.vol2)!.spec.num_snapshots).toBe(1);
      // The stored value's own fields (unknown ones too) are store dump's to print, not get's.
      expect(all.stdout).not.toContain('storctl_future_field');
      const y = await storctl('get', 'volume', ids.vol2, '-o', 'yaml');
      expect(y.stdout).toMatch(/^spec:\n {2}uuid: 7a9c3e21/m);
      expect((await storctl('get', 'volumes', '-o', 'yaml')).stdout).toMatch(/^- spec:\n {4}uuid: 7a9c3e21/m);
      // A node's state is its liveness, which the store holds: the same object core answers.
      const node = JSON.parse((await storctl('get', 'node', 'node-2', '-o', 'json')).stdout);
      expect(node).toMatchObject({
        id: 'node-2',
        spec: { id: 'node-2', grpcEndpoint: '127.0.0.1:10125' },
        state: { id: 'node-2', status: 'Offline', cordoned: true },
      });
      expect(JSON.parse((await storctl('get', 'node', 'node-1', '-o', 'json')).stdout).state).toMatchObject({
        status: 'Online',
        nbdEndpoint: '127.0.0.1:10809',
      });
      const snaps = JSON.parse((await storctl('get', 'snapshots', '-o', 'json')).stdout);
      expect(snaps).toEqual([
        {
          definition: {
            spec: { uuid: ids.snap, source_volume: ids.vol2 },
            metadata: expect.objectContaining({
              status: 'Created',
              txn_id: '1',
              num_restores: 0,
              num_snapshot_replicas: 1,
            }),
          },
        },
      ]);
      // kubectl habits: the plural with an id, and short names, print the same object.
      expect((await storctl('get', 'volumes', ids.vol1, '-o', 'json')).stdout).toBe(r.stdout);
      expect((await storctl('get', 'vol', ids.vol1, '-o', 'json')).stdout).toBe(r.stdout);
      expect((await storctl('get', 'no', 'node-1', '-o', 'json')).stdout).toBe(
        (await storctl('get', 'node', 'node-1', '-o', 'json')).stdout,
      );
      const missing = await storctl('get', 'volumes', '00000000-0000-4000-8000-000000000000');
      expect(missing.code).toBe(3);
    });

    it('prints -o jsonpath and -o custom-columns from the objects -o json prints', async () => {
      const uuids = await storctl('get', 'volumes', '-o', 'jsonpath={.items[*].spec.uuid}');
      expect(uuids.stderr).toBe('');
      expect(uuids.code).toBe(0);
      expect(uuids.stdout.trim().split(' ').sort()).toEqual([ids.vol1, ids.vol2].sort());
      // One object is the root itself.
      const key = await storctl(
        'get',
        'volume',
        ids.vol1,
        '-o',
        'jsonpath={.spec.target.node} {.spec.num_replicas}',
      );
      expect(key.stdout).toBe('node-1 2\n');
      const cols = await storctl(
        'get',
        'pools',
        '-o',
        'custom-columns=ID:.id,NODE:.spec.node,ZONE:.spec.labels.zone,X:.nope',
      );
      expect(cols.code).toBe(0);
      expect(
        cols.stdout
          .trim()
          .split('\n')
          .map((l) => l.trim().split(/\s+/)),
      ).toEqual([
        ['ID', 'NODE', 'ZONE', 'X'],
        ['pool-1', 'node-1', 'a', '<none>'],
        ['pool-2', 'node-2', 'b', '<none>'],
      ]);
      const bare = await storctl(
        'get',
        'pools',
        '-l',
        'zone=b',
        '-o',
        'custom-columns=ID:.id',
        '--no-headers',
      );
      expect(bare.stdout).toBe('pool-2\n');
    });

    it('refuses a bad -o template with exit 2 before reading anything, and where it cannot apply', async () => {
      const range = await storctl('get', 'volumes', '-o', 'jsonpath={range .items[*]}{.uuid}{end}');
      expect(range.code).toBe(2);
      expect(range.stderr).toContain('{range} is not supported');
      expect(range.stdout).toBe('');
      const cols = await storctl('get', 'volumes', '-o', 'custom-columns=ID');
      expect(cols.code).toBe(2);
      expect(cols.stderr).toContain("'ID' is not HEADER:.path");
      // describe prints a page, not a listing.
      const page = await storctl('describe', 'volume', ids.vol1, '-o', 'jsonpath={.spec}');
      expect(page.code).toBe(2);
      expect(page.stderr).toContain('-o jsonpath prints listings');
    });

    it('shows node liveness and cordon state; -o wide adds columns; --selector filters', async () => {
      const r = await storctl('get', 'nodes', '-o', 'wide');
      expect(r.stdout).toMatch(/node-1\s+127\.0\.0\.1:10124\s+Online\s+v0\.1\.0\s+127\.0\.0\.1:10809/);
      expect(r.stdout).toMatch(/node-2\s+127\.0\.0\.1:10125\s+Offline, Cordoned\s+<none>/);
      expect(r.stdout).toContain('maintenance');
      const sel = await storctl('get', 'nodes', '--selector', 'zone=b');
      expect(sel.stdout).toContain('node-2');
      expect(sel.stdout).not.toContain('node-1');
      // --no-headers: the same rows, without the header line.
      const bare = await storctl('get', 'nodes', '-o', 'wide', '--no-headers');
      expect(bare.stdout.split('\n')).toEqual(r.stdout.split('\n').slice(1));
    });

    it('lists pools with committed size and Unknown status on a dead node; filters by selector', async () => {
      const r = await storctl('get', 'pools');
      expect(r.stdout).toMatch(
        /pool-1\s+aio:\/\/\/var\/lib\/storctl\/pool-1\s+true\s+node-1\s+Online\s+<none>\s+<none>\s+<none>\s+6GiB/,
      );
      expect(r.stdout).toMatch(/pool-2\s+\S+\s+true\s+node-2\s+Unknown/);
      const sel = await storctl('get', 'pools', '-l', 'zone=a', '-o', 'json');
      expect(JSON.parse(sel.stdout).map((p: { id: string }) => p.id)).toEqual(['pool-1']);
      const one = await storctl('get', 'pool', 'pool-2', '-o', 'json');
      expect(JSON.parse(one.stdout).spec.node).toBe('node-2');
    });

    it('shows replicas, nexuses, snapshots, switchovers and the replica topology of a volume', async () => {
      expect((await storctl('get', 'replicas')).stdout).toMatch(
        new RegExp(`${ids.rep2}\\s+pool-2\\s+node-2\\s+1GiB\\s+false\\s+nbd\\s+Online\\s+${ids.vol1}`),
      );
      expect((await storctl('get', 'nexuses')).stdout).toMatch(
        new RegExp(`${ids.nexus}\\s+${ids.vol1}\\s+node-1\\s+1GiB\\s+2\\s+nbd\\s+Online`),
      );
      expect((await storctl('get', 'snapshots')).stdout).toMatch(
        // SOURCE-SIZE, ALLOCATED-SIZE (its replica snapshot's), TOTAL-ALLOCATED-SIZE, …, RESTORES, REPLICAS
        new RegExp(`${ids.snap}\\s+2026-11-01T10:00:00Z\\s+5GiB\\s+2MiB\\s+3MiB\\s+${ids.vol2}\\s+0\\s+1`),
      );
      expect((await storctl('get', 'switchovers')).stdout).toMatch(
        // VOLUME STAGE RETRIES AGE FROM TO REASON
        new RegExp(`${ids.vol1}\\s+ReplacePath\\s+1\\s+\\d+[smhd]\\s+\\S+\\s+\\S+\\s+<none>`),
      );
      const topo = await storctl('get', 'volume-replica-topology', ids.vol1);
      expect(topo.stdout).toMatch(
        new RegExp(`${ids.rep1}\\s+node-1\\s+pool-1\\s+Online\\s+1GiB\\s+<none>\\s+<none>\\s+Online`),
      );
      expect(topo.stdout).toMatch(
        new RegExp(
          `${ids.rep2}\\s+node-2\\s+pool-2\\s+Online\\s+1GiB\\s+<none>\\s+<none>\\s+Faulted\\s+marked unhealthy in NexusInfo`,
        ),
      );
      // Every volume's: its id on its first replica's row (by replica id), tree glyphs on the others.
      const all = await storctl('get', 'volume-replica-topologies');
      expect(all.code, all.stderr).toBe(0);
      const rows = all.stdout
        .trim()
        .split('\n')
        .map((l) =>
          l
            .trim()
            .split(/\s{2,}/)
            .slice(0, 2),
        );
      const [vol1First, vol1Last] = [ids.rep1, ids.rep2].sort();
      // Volumes in id order (vol1 < vol2).
      expect(rows).toEqual([
        ['VOLUME-ID', 'ID'],
        [ids.vol1, vol1First],
        ['└─', vol1Last],
        [ids.vol2, ids.rep3],
      ]);
      expect(all.stdout).toMatch(new RegExp(`└─\\s+${vol1Last}\\s+node-\\d\\s+pool-\\d\\s+Online\\s+1GiB`));
    });

    it('answers a missing resource with exit 3 and a next step', async () => {
      const r = await storctl('get', 'volume', '00000000-0000-4000-8000-000000000000');
      expect(r.code).toBe(3);
      expect(r.stderr).toContain("volume '00000000-0000-4000-8000-000000000000' not found");
      expect(r.stderr).toContain('storctl get volumes');
      expect(r.stdout).toBe('');
    });

    it('reports a value that does not decode by key and field, after showing the rest (exit 8)', async () => {
      const badKey = records[0][0].replace('NodeSpec/node-1', 'NodeSpec/node-9');
      await store.put(badKey, '{"id":"node-9","endpoint":42}');
      try {
        const r = await storctl('get', 'nodes');
        expect(r.code).toBe(8);
        expect(r.stdout).toContain('node-1');
        expect(r.stderr).toContain(`cannot decode ${badKey}: field 'endpoint'`);
        // Streamed json reports it the same way and still prints valid JSON of the rest.
        const j = await storctl('get', 'nodes', '-o', 'json');
        expect(j.code).toBe(8);
        expect(JSON.parse(j.stdout).map((n: { id: string }) => n.id)).toEqual(['node-1', 'node-2']);
        expect(j.stderr).toContain(`cannot decode ${badKey}: field 'endpoint'`);
      } finally {
        await store.delete(badKey);
      }
    });

    it('streams a listing of several pages in key order, reporting bad values on any page (exit 8)', async () => {
      const big = { clusterId: 'e2e-big', namespace: 'default' };
      const volumeJson = records.find(([k]) => k === objectKey(space, 'VolumeSpec', ids.vol1))![1];
      const uuids = Array.from(
        { length: 4500 },
        (_, i) => `${i.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`,
      );
      const bad = new Set([uuids[100], uuids[3000]]);
      for (let i = 0; i < uuids.length; i += 100) {
        const success = uuids.slice(i, i + 100).map((uuid) => ({
          type: 'put' as const,
          key: objectKey(big, 'VolumeSpec', uuid),
          value: bad.has(uuid) ? '{"uuid":"not-a-uuid"}' : volumeJson.replace(ids.vol1, uuid),
        }));
        await store.txn({ compare: [], success });
      }
      const r = await runStorctl([
        'get',
        'volumes',
        '-o',
        'json',
        '--store',
        url,
        '--cluster-id',
        big.clusterId,
      ]);
      expect(r.code).toBe(8);
      const listed = (JSON.parse(r.stdout) as { spec: { uuid: string } }[]).map((v) => v.spec.uuid);
      expect(listed).toEqual(uuids.filter((u) => !bad.has(u)));
      for (const u of bad)
        expect(r.stderr).toContain(`cannot decode ${objectKey(big, 'VolumeSpec', u)}: field 'uuid'`);

      // The table's rows are made on the validation worker from the same pages: one row per good
      // value in key order, the status refined by a NexusInfo and the snapshot count, on late pages.
      const [degraded, snapped] = [uuids[2500], uuids[4000]];
      await store.put(
        nexusInfoKey(big, ids.nexus, degraded),
        records.find(([k]) => k === nexusInfoKey(space, ids.nexus, ids.vol1))![1],
      );
      await store.put(
        objectKey(big, 'VolumeSnapshot', ids.snap),
        records
          .find(([k]) => k === objectKey(space, 'VolumeSnapshot', ids.snap))![1]
          .replace(ids.vol2, snapped),
      );
      for (const wide of [false, true]) {
        const t = await runStorctl([
          'get',
          'volumes',
          ...(wide ? ['-o', 'wide'] : []),
          '--store',
          url,
          '--cluster-id',
          big.clusterId,
        ]);
        expect(t.code).toBe(8);
        const [header, ...rows] = t.stdout.trimEnd().split('\n');
        expect(header.trim().split(/\s+/).slice(-1)[0]).toBe(wide ? 'LABELS' : 'SOURCE');
        const cells = rows.map((l) => l.trim().split(/\s+/));
        expect(cells.map((c) => c[0])).toEqual(listed);
        const row = (u: string) => cells.find((c) => c[0] === u)!;
        expect(row(degraded).slice(1, 10)).toEqual(VOL1_CELLS);
        expect(row(snapped)[4]).toBe('Online');
        expect(row(snapped)[8]).toBe('1');
        if (wide) expect(row(uuids[0])[10]).toBe(ids.nexus);
        for (const u of bad)
          expect(t.stderr).toContain(`cannot decode ${objectKey(big, 'VolumeSpec', u)}: field 'uuid'`);
      }
      await store.deletePrefix(`/openebs.io/mayastor/apis/v0/clusters/${big.clusterId}/`);
    });

    it('dumps every key and loads it back identically; a bad dump changes nothing', async () => {
      const file = join(tmp, 'dump.jsonl');
      const dump = await storctl('store', 'dump', '--file', file);
      expect(dump.code).toBe(0);
      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.length).toBe(records.length);
      for (const l of lines)
        expect(l).toMatchObject({
          key: expect.any(String),
          value: expect.any(String),
          mod_revision: expect.any(Number),
        });
      const vol = lines.find((l) => l.key.endsWith(`VolumeSpec/${ids.vol1}`));
      expect(vol.value).toBe(records.find(([k]) => k.endsWith(`VolumeSpec/${ids.vol1}`))![1]);

      // A dump whose last line is invalid: refused with the line named, nothing written.
      const before = await store.revision();
      const bad = join(tmp, 'bad.jsonl');
      const newKey = records[0][0].replace('NodeSpec/node-1', 'NodeSpec/node-7');
      writeFileSync(
        bad,
        [
          JSON.stringify({ key: newKey, value: '{"id":"node-7","endpoint":"127.0.0.1:1"}' }),
          JSON.stringify({ key: records[5][0], value: '{"uuid":1}' }),
        ].join('\n'),
      );
      const refused = await storctl('store', 'load', bad);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/line 2: cannot decode .*VolumeSpec.*field 'uuid'/);
      expect(await store.get(newKey)).toBeNull();
      expect(await store.revision()).toBe(before);

      // Unknown record types are refused unless --force.
      const unknown = join(tmp, 'unknown.jsonl');
      const unknownKey = records[0][0].replace('NodeSpec/node-1', 'FutureThing/x');
      writeFileSync(unknown, JSON.stringify({ key: unknownKey, value: '{}' }));
      expect((await storctl('store', 'load', unknown)).code).toBe(2);
      expect((await storctl('store', 'load', unknown, '--force')).code).toBe(0);
      expect((await store.get(unknownKey))?.value).toBe('{}');
      await store.delete(unknownKey);

      // Loading the dump again rewrites the same values.
      const again = await storctl('store', 'load', file);
      expect(again.code).toBe(0);
      expect(again.stderr).toContain('skipped 1 lease-bound keys');
      expect((await store.get(vol.key))?.value).toBe(vol.value);
    });
  });
}

suite('embedded', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-get-db-'));
  return {
    url: `sqlite:${join(dir, 'store.db')}`,
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});

let etcd: EtcdServer;
suite('etcd', async () => {
  etcd = await startEtcd();
  return { url: etcd.url, cleanup: () => etcd.stop() };
});
