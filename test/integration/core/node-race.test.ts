import { afterEach, describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, TestCluster } from './cluster.js';

const RESTARTS = 4;

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`NodeSpec writes of core and io-engine do not lose each other's fields (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('cordon/uncordon/label calls while the io-engine re-registers: every label, the right cordons, the new endpoint', async () => {
      cluster = await TestCluster.start({ backend, engines: 2, pools: false });
      const c = cluster;
      const key = objectKey({ clusterId: c.clusterId, namespace: 'default' }, 'NodeSpec', 'node-1');
      const endpoints = [c.engine('node-1').grpc];

      // The io-engine restarts on fresh ports: each start re-registers its NodeSpec (new endpoint).
      let restarting = true;
      const restarts = (async () => {
        try {
          for (let i = 0; i < RESTARTS; i++) {
            await c.engine('node-1').proc.kill('SIGTERM');
            endpoints.push((await c.startEngine('node-1')).grpc);
          }
        } finally {
          restarting = false;
        }
      })();

      // Meanwhile core writes labels and cordons into the same NodeSpec, one call after another.
      const labels: Record<string, string> = {};
      const cordoned: string[] = [];
      let i = 0;
      while (restarting || i < 30) {
        await c.rest.labelNode('node-1', `k${i}`, `v${i}`);
        labels[`k${i}`] = `v${i}`;
        await c.rest.cordonNode('node-1', `c${i}`);
        if (i % 3 === 0) cordoned.push(`c${i}`);
        else await c.rest.uncordonNode('node-1', `c${i}`);
        i++;
      }
      await restarts;
      expect(endpoints.length).toBe(RESTARTS + 1);
      expect(new Set(endpoints).size).toBe(RESTARTS + 1);

      const store = await openStore(c.storeUrl);
      try {
        const spec = JSON.parse((await store.get(key))!.value);
        // The io-engine's field: its latest endpoint, not one core read before a re-registration.
        expect(spec.endpoint).toBe(endpoints.at(-1));
        // Core's fields: every label and exactly the cordons left in place.
        expect(spec.labels).toEqual(labels);
        expect(spec.cordon_drain_state).toEqual({ Cordoned: { cordonlabels: cordoned } });
      } finally {
        await store.close();
      }
      // Core's view agrees once it re-reads the node (every cache period).
      const node = await waitFor(
        async () => {
          const n = await c.rest.getNode('node-1');
          return n.spec?.grpcEndpoint === endpoints.at(-1) && n.state.status === 'Online' ? n : null;
        },
        { what: 'core sees the latest endpoint', timeoutMs: 15_000 },
      );
      expect(node.spec?.labels).toEqual(labels);
      expect(node.spec?.cordondrainstate?.cordonedstate?.cordonlabels).toEqual(cordoned);
    }, 120_000);
  });
}
