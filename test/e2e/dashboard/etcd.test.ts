import { render } from 'ink-testing-library';
import { createElement as h } from 'react';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dashboard } from '../../../src/lib/dashboard/Dashboard.js';
import { DashboardModel } from '../../../src/lib/dashboard/model.js';
import { makeTheme } from '../../../src/lib/dashboard/theme.js';
import { nodeLivenessKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { waitFor } from '../../helpers/wait.js';
import { seed, smallCluster, space, volumeId, volumeRecords } from '../../unit/dashboard/fixture.js';

/** The same view on the etcd backend (a real etcd): the watch, not the backend, feeds it. */
describe('storctl dashboard on etcd', () => {
  let etcd: EtcdServer;
  let store: Store;

  beforeAll(async () => {
    etcd = await startEtcd();
    store = await openStore(etcd.url);
    await seed(store, smallCluster());
  });
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
  });

  it('shows the cluster, a new volume, and a node going offline', async () => {
    const model = new DashboardModel({ store, space, coalesceMs: 50 });
    await model.start();
    const app = render(
      h(Dashboard, { model, source: store.endpoint, width: 100, height: 30, theme: makeTheme({}) }),
    );
    const frame = () => app.lastFrame() ?? '';
    try {
      await waitFor(() => frame().includes(volumeId(3)), { what: 'the volumes' });
      expect(frame()).toContain('nodes 3/3 online');
      await seed(store, volumeRecords(7));
      await waitFor(() => frame().includes(volumeId(7)), { what: 'the new volume' });
      await store.delete(nodeLivenessKey(space, 'node-1'));
      await waitFor(() => frame().includes('nodes 2/3 online'), { what: 'node-1 offline' });
    } finally {
      app.unmount();
      await model.stop();
    }
  });
});
