import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../src/daemons/core/rest/openapi.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { checkedFetch } from '../../helpers/openapi-validate.js';
import { runStorctl } from '../../helpers/storctl.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

async function req(base: string, method: string, path: string, body?: unknown) {
  const res = await checkedFetch(`${base}/v0${path}`, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read fields of whatever came back
  return { status: res.status, body: res.body as any };
}

interface BlockDevice {
  devname: string;
  devtype: string;
  devmajor: number;
  devminor: number;
  size: number;
  available: boolean;
  filesystem?: { fstype: string; mountpoint: string };
  partition?: { parent: string };
}

/**
 * Loop and NBD devices (and their partitions) come and go with other test files running at the same time (losetup, nbd
 * clients), between our read of /sys/block and the io-engine's: comparisons use the other disks.
 */
const stableDisk = (devname: string) => !/^(\/dev\/)?(loop|nbd)\d+(p\d+)?$/.test(devname);

/** The stable disks in /sys/block as /dev paths, sorted; at least one, or the comparison is empty. */
function stableSysBlock(): string[] {
  const disks = readdirSync('/sys/block')
    .sort()
    .filter(stableDisk)
    .map((d) => `/dev/${d}`);
  expect(disks.length, 'stable disks in /sys/block to compare').toBeGreaterThan(0);
  return disks;
}

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core pool labels, app nodes and block devices (${backend} store)`, () => {
    let cluster: TestCluster;
    let call: (method: string, path: string, body?: unknown) => ReturnType<typeof req>;
    beforeAll(async () => {
      cluster = await TestCluster.start({ backend });
      call = (method, path, body) => req(cluster.restUrl, method, path, body);
    }, 90_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('serves its OpenAPI document at /v0/api/spec and answers the JSON-RPC passthrough 501', async () => {
      const spec = await call('GET', '/api/spec');
      expect(spec.status).toBe(200);
      expect(spec.body).toEqual(JSON.parse(JSON.stringify(openApiDocument)));
      expect(spec.body.paths['/volumes/{volume_id}'].get.operationId).toBe('get_volume');

      const rpc = await call('PUT', '/nodes/node-1/jsongrpc/bdev_get_bdevs', {});
      expect(rpc.status).toBe(501);
      expect(rpc.body.kind).toBe('Unimplemented');
      expect(rpc.body.message).toMatch(/no SPDK JSON-RPC/);
      // a GET of the same path is a method the path does not allow, not an unknown path
      expect((await call('GET', '/nodes/node-1/jsongrpc/bdev_get_bdevs')).body.kind).toBe('NotAcceptable');
    });

    it('labels and unlabels a pool with Mayastor semantics, and the scheduler uses the label', async () => {
      const put = await call('PUT', '/pools/pool-node-2/label/zone=b');
      expect(put.status).toBe(200);
      expect(put.body.spec.labels).toEqual({ zone: 'b' });
      // Same label again: nothing to change. Another value without overwrite: 412 FailedPrecondition.
      expect((await call('PUT', '/pools/pool-node-2/label/zone=b')).status).toBe(200);
      const clash = await call('PUT', '/pools/pool-node-2/label/zone=c');
      expect(clash.status).toBe(412);
      expect(clash.body.kind).toBe('FailedPrecondition');
      expect(clash.body.message).toContain('zone=b');
      expect((await call('PUT', '/pools/pool-node-2/label/zone=c?overwrite=false')).status).toBe(412);
      const over = await call('PUT', '/pools/pool-node-2/label/zone=a?overwrite=true');
      expect(over.status).toBe(200);
      expect(over.body.spec.labels).toEqual({ zone: 'a' });
      expect(
        (await call('PUT', '/pools/pool-node-2/label/openebs.io%2Fclass=fast')).body.spec.labels,
      ).toEqual({
        zone: 'a',
        'openebs.io/class': 'fast',
      });

      const specs = await call('GET', '/specs');
      const stored = specs.body.pools.find((p: { id: string }) => p.id === 'pool-node-2');
      expect(stored.labels).toEqual({ zone: 'a', 'openebs.io/class': 'fast' });

      // A volume whose pool topology asks for zone=a lands on the labelled pool.
      const vol = newVolumeId();
      const v = await cluster.rest.createVolume(vol, {
        size: 4 * MiB,
        replicas: 1,
        thin: true,
        policy: { self_heal: true },
        topology: { pool_topology: { labelled: { inclusion: { zone: 'a' }, exclusion: {} } } },
      });
      expect(Object.values(v.state.replica_topology).map((r) => r.pool)).toEqual(['pool-node-2']);
      await cluster.rest.deleteVolume(vol);

      const del = await call('DELETE', '/pools/pool-node-2/label/zone');
      expect(del.status).toBe(200);
      expect(del.body.spec.labels).toEqual({ 'openebs.io/class': 'fast' });
      const gone = await call('DELETE', '/pools/pool-node-2/label/zone');
      expect(gone.status).toBe(412);
      expect(gone.body.kind).toBe('FailedPrecondition');
      expect((await call('DELETE', '/pools/pool-node-2/label/openebs.io%2Fclass')).status).toBe(200);

      expect((await call('PUT', '/pools/no-such-pool/label/a=b')).status).toBe(404);
      const badKey = await call('PUT', '/pools/pool-node-2/label/-bad=x');
      expect(badKey.status).toBe(400);
      expect(badKey.body.message).toContain("'key'");
      expect((await call('PUT', '/pools/pool-node-2/label/a=b?overwrite=yes')).status).toBe(400);
    });

    if (backend === 'embedded')
      it('labels pools and lists block devices from the CLI, in json and as a table', async () => {
        const cli = (...args: string[]) => runStorctl(args, { env: cluster.env });
        const set = await cli('pool', 'label', 'pool-node-3', 'tier=gold', '-o', 'json');
        expect(set.code, set.stderr).toBe(0);
        expect(JSON.parse(set.stdout).spec.labels).toEqual({ tier: 'gold' });
        const clash = await cli('pool', 'label', 'pool-node-3', 'tier=silver');
        expect(clash.code).not.toBe(0);
        expect(clash.stderr).toContain('FailedPrecondition');
        expect(clash.stderr).toContain('overwrite');
        const table = await cli('pool', 'label', 'pool-node-3', 'tier=silver', '--overwrite');
        expect(table.code, table.stderr).toBe(0);
        expect(table.stdout).toMatch(/LABELS[\s\S]*tier=silver/);
        // The columns of \`get pools\`, which reads the same pool from the store.
        expect(table.stdout).toMatch(/ALLOCATED +AVAILABLE +COMMITTED +LABELS/);
        const removed = await cli('pool', 'label', 'pool-node-3', 'tier-', '-o', 'yaml');
        expect(removed.code, removed.stderr).toBe(0);
        expect(removed.stdout).not.toContain('tier');
        expect((await cli('pool', 'label', 'pool-node-3', 'tier')).code).toBe(2);

        const devices = await cli('get', 'block-devices', 'node-1', '--all', '-o', 'json');
        expect(devices.code, devices.stderr).toBe(0);
        const names = (JSON.parse(devices.stdout) as BlockDevice[])
          .filter((d) => d.devtype === 'disk' && stableDisk(d.devname))
          .map((d) => d.devname);
        expect(names).toEqual(stableSysBlock());
        const wide = await cli('get', 'block-devices', 'node-1', '--all', '-o', 'wide');
        expect(wide.stdout.split('\n')[0]).toMatch(/^\s*DEVNAME\s+DEVTYPE\s+SIZE\s+AVAILABLE.*DEVPATH/);
        const unknown = await cli('get', 'block-devices', 'node-9');
        expect(unknown.code).toBe(3);
        expect(unknown.stderr).toContain('NotFound');
      });

    it('registers, pages through, reads and deregisters app nodes stored as AppNodeSpec', async () => {
      for (const [id, endpoint] of [
        ['csi-node-1', '10.1.0.5:50055'],
        ['csi-node-2', '10.1.0.6:50055'],
        ['csi-node-3', '[fd00::7]:50055'],
      ]) {
        const put = await call('PUT', `/app-nodes/${id}`, { endpoint, labels: { 'topology.io/zone': 'z1' } });
        expect(put.status).toBe(204);
      }
      const one = await call('GET', '/app-nodes/csi-node-1');
      expect(one.status).toBe(200);
      expect(one.body).toEqual({
        id: 'csi-node-1',
        spec: { id: 'csi-node-1', endpoint: '10.1.0.5:50055', labels: { 'topology.io/zone': 'z1' } },
      });

      const page1 = await call('GET', '/app-nodes?max_entries=2');
      expect(page1.body.entries.map((a: { id: string }) => a.id)).toEqual(['csi-node-1', 'csi-node-2']);
      expect(page1.body.next_token).toBe(2);
      const page2 = await call('GET', '/app-nodes?max_entries=2&starting_token=2');
      expect(page2.body.entries.map((a: { id: string }) => a.id)).toEqual(['csi-node-3']);
      expect(page2.body.next_token).toBeUndefined();
      expect((await call('GET', '/app-nodes?max_entries=0')).body.entries).toHaveLength(3);
      const noMax = await call('GET', '/app-nodes');
      expect(noMax.status).toBe(400);
      expect(noMax.body.message).toContain('max_entries');

      // Re-registration replaces the endpoint; the stored value is Mayastor's AppNodeSpec.
      expect((await call('PUT', '/app-nodes/csi-node-2', { endpoint: '10.1.0.9:50055' })).status).toBe(204);
      const store = await openStore(cluster.storeUrl);
      try {
        const key = objectKey(
          { clusterId: cluster.clusterId, namespace: 'default' },
          'AppNodeSpec',
          'csi-node-2',
        );
        const kv = await store.get(key);
        expect(JSON.parse(kv!.value)).toEqual({ id: 'csi-node-2', endpoint: '10.1.0.9:50055', labels: null });
      } finally {
        await store.close();
      }

      for (const bad of [
        { labels: {} },
        { endpoint: '10.1.0.5' },
        { endpoint: '10.1.0.5:0' },
        { endpoint: 'http://x:1/' },
        { endpoint: '10.1.0.5:50055', labels: { '-x': 'y' } },
        { endpoint: '10.1.0.5:50055', labels: { a: 7 } },
      ]) {
        const r = await call('PUT', '/app-nodes/csi-node-9', bad);
        expect(r.status, JSON.stringify(bad)).toBe(400);
        expect(r.body.kind).toBe('InvalidArgument');
        expect(r.body.message).toMatch(/endpoint|labels/);
      }
      expect((await call('PUT', '/app-nodes/bad%20id', { endpoint: '10.0.0.1:1' })).status).toBe(400);
      expect((await call('GET', '/app-nodes/csi-node-9')).status).toBe(404);

      for (const id of ['csi-node-1', 'csi-node-2', 'csi-node-3'])
        expect((await call('DELETE', `/app-nodes/${id}`)).status).toBe(204);
      const missing = await call('DELETE', '/app-nodes/csi-node-1');
      expect(missing.status).toBe(404);
      expect(missing.body.kind).toBe('NotFound');
      expect((await call('GET', '/app-nodes?max_entries=0')).body.entries).toEqual([]);
    });

    if (backend === 'embedded')
      it('lists the node block devices from sysfs as the io-engine sees them', async () => {
        const all = await call('GET', '/nodes/node-1/block_devices?all=true');
        expect(all.status).toBe(200);
        const devices = all.body as BlockDevice[];
        const stable = devices.filter((d) => d.devtype === 'disk' && stableDisk(d.devname));
        expect(stable.map((d) => d.devname)).toEqual(stableSysBlock());
        for (const d of stable) {
          const name = d.devname.slice('/dev/'.length);
          expect(`${d.devmajor}:${d.devminor}`).toBe(readFileSync(`/sys/block/${name}/dev`, 'utf8').trim());
          expect(d.size).toBe(Number(readFileSync(`/sys/block/${name}/size`, 'utf8').trim()));
        }
        // A device holding a mounted filesystem is never available.
        for (const d of devices.filter((x) => x.filesystem?.mountpoint)) expect(d.available).toBe(false);
        const usable = await call('GET', '/nodes/node-1/block_devices');
        expect((usable.body as BlockDevice[]).every((d) => d.available)).toBe(true);
        const stableNames = (list: BlockDevice[]) => list.map((d) => d.devname).filter(stableDisk);
        expect(stableNames(usable.body as BlockDevice[])).toEqual(
          stableNames(devices.filter((d) => d.available)),
        );

        expect((await call('GET', '/nodes/node-9/block_devices')).status).toBe(404);
        expect((await call('GET', '/nodes/node-1/block_devices?all=maybe')).status).toBe(400);
      });

    // Loop devices need root, as every mount test of this suite does (CI runs as root).
    if (backend === 'embedded')
      it('reports a fresh loop device available, and unavailable once it holds a filesystem', async () => {
        const file = join(cluster.dir, 'disk.img');
        writeFileSync(file, '');
        execFileSync('truncate', ['-s', '64M', file]);
        const dev = execFileSync('losetup', ['--find', '--show', file], { encoding: 'utf8' }).trim();
        try {
          const find = async (all: boolean) =>
            ((await call('GET', `/nodes/node-2/block_devices?all=${all}`)).body as BlockDevice[]).find(
              (d) => d.devname === dev,
            );
          const fresh = await find(false);
          expect(fresh).toMatchObject({
            devname: dev,
            devtype: 'disk',
            size: (64 * MiB) / 512,
            available: true,
          });
          execFileSync('mkfs.ext4', ['-q', '-F', '-L', 'storctl-t', dev]);
          expect(await find(false)).toBeUndefined();
          const formatted = await find(true);
          expect(formatted?.available).toBe(false);
          expect(formatted?.filesystem).toMatchObject({ fstype: 'ext4', mountpoint: '', label: 'storctl-t' });
        } finally {
          execFileSync('losetup', ['-d', dev]);
        }
      });
  });
}
