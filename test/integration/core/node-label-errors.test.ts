import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';
import { type Backend, TestCluster } from './cluster.js';
import { call } from './store-outage.js';

/**
 * Node labels answer like Mayastor's label endpoints (and storctl's pool labels): a key held with
 * another value and no overwrite, or an unlabel of an absent key, is 412 FailedPrecondition; the
 * same label again is a no-op. The CLI prints the kind and the next step.
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`node label errors (${backend} store)`, () => {
    let cluster: TestCluster;
    beforeAll(async () => {
      cluster = await TestCluster.start({ backend, engines: 1, pools: false });
    }, 60_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('REST: 412 FailedPrecondition for a clash without overwrite and for an absent key', async () => {
      const c = cluster;
      const put = await call(c.restUrl, 'PUT', '/nodes/node-1/label/zone=a');
      expect(put.status).toBe(200);
      expect(put.body.spec.labels).toEqual({ zone: 'a' });
      expect((await call(c.restUrl, 'PUT', '/nodes/node-1/label/zone=a')).status).toBe(200);
      const clash = await call(c.restUrl, 'PUT', '/nodes/node-1/label/zone=b');
      expect(clash.status).toBe(412);
      expect(clash.body.kind).toBe('FailedPrecondition');
      expect(clash.body.message).toContain('overwrite');
      expect(clash.body.details).toBe('Label zone exists on node node-1 with value a');
      expect((await call(c.restUrl, 'PUT', '/nodes/node-1/label/zone=b?overwrite=false')).status).toBe(412);
      const over = await call(c.restUrl, 'PUT', '/nodes/node-1/label/zone=b?overwrite=true');
      expect(over.status).toBe(200);
      expect(over.body.spec.labels).toEqual({ zone: 'b' });
      expect((await call(c.restUrl, 'DELETE', '/nodes/node-1/label/zone')).status).toBe(200);
      const gone = await call(c.restUrl, 'DELETE', '/nodes/node-1/label/zone');
      expect(gone.status).toBe(412);
      expect(gone.body.kind).toBe('FailedPrecondition');
      expect(gone.body.details).toBe('Label zone not found on node node-1');
      // An unknown node is still 404.
      expect((await call(c.restUrl, 'PUT', '/nodes/no-such-node/label/a=b')).status).toBe(404);
      // The store holds what the successful requests left, and nothing from the refused ones.
      const store = await openStore(c.storeUrl);
      try {
        const kv = await store.get(
          objectKey({ clusterId: c.clusterId, namespace: 'default' }, 'NodeSpec', 'node-1'),
        );
        expect(JSON.parse(kv!.value).labels ?? {}).toEqual({});
      } finally {
        await store.close();
      }
    });

    it('CLI: prints the kind and the next step, exit code 4 (conflict)', async () => {
      const cli = (...args: string[]) => runStorctl(args, { env: cluster.env });
      expect((await cli('node', 'label', 'node-1', 'tier=gold')).code).toBe(0);
      const clash = await cli('node', 'label', 'node-1', 'tier=silver');
      expect(clash.stderr).toContain('FailedPrecondition');
      expect(clash.stderr).toContain(
        'Try: replace the value with `storctl node label node-1 tier=silver --overwrite`',
      );
      const absent = await cli('node', 'label', 'node-1', 'nope-');
      expect(absent.stderr).toContain('FailedPrecondition');
      expect(absent.stderr).toContain('storctl get node node-1 -o json');
      expect(absent.code).toBe(clash.code);
      expect(clash.code).toBe(4);
      expect((await cli('node', 'label', 'node-1', 'tier=silver', '--overwrite')).code).toBe(0);
    });

    it('a node no io-engine registered as is NotFound (404, exit 3), not offline (503, exit 6)', async () => {
      const pool = await call(cluster.restUrl, 'PUT', '/nodes/node-9/pools/p9', { disks: ['/tmp/p9'] });
      expect(pool.status, JSON.stringify(pool.body)).toBe(404);
      expect(pool.body.message).toBe("node 'node-9' not found");
      const nexus = await call(cluster.restUrl, 'PUT', `/nodes/node-9/nexuses/${crypto.randomUUID()}`, {
        size: 1 << 20,
        children: ['bdev:///x'],
      });
      expect(nexus.status, JSON.stringify(nexus.body)).toBe(404);
      const cli = await runStorctl(['pool', 'create', 'node-9', 'p9', '--capacity', '64Mi'], {
        env: cluster.env,
      });
      expect(cli.code).toBe(3);
      expect(cli.stderr).toContain("NotFound: node 'node-9' not found");
    });
  });
