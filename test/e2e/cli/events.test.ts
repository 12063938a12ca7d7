import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_RESOURCES, eventKey, listEvents, makeEvent } from '../../../src/lib/catalog/events.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { runStorctl } from '../../helpers/storctl.js';

const space = { clusterId: 'events-test', namespace: 'default' };
const VOLUME = '4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b';
const OTHER = '5f12b6cd-2f30-4d4e-8b9c-8d7e6f5a4b3c';

/** The events log as `storctl events` reads it, from a real embedded store. */
describe('storctl events', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-events-'));
  const storeUrl = `sqlite:${join(dir, 'store.db')}`;
  let store: Store;
  beforeAll(async () => {
    store = await openStore(storeUrl);
    for (const e of [
      makeEvent('volume', VOLUME, 'Created', '1 replica(s)'),
      makeEvent('volume', OTHER, 'Created', '1 replica(s)'),
      makeEvent('switchover', VOLUME, 'SwitchOverCompleted', 'target moved'),
      makeEvent('node', 'node-1', 'Offline', 'liveness key expired'),
    ])
      await store.put(eventKey(space), JSON.stringify(e));
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('filters by resource kind and by id', async () => {
    const of = async (filter: { resource?: string; id?: string }) =>
      (await listEvents(store, space, { ...filter, limit: 100 })).events.map(
        (e) => `${e.resource}/${e.action}`,
      );
    expect(await of({ id: VOLUME })).toEqual(['volume/Created', 'switchover/SwitchOverCompleted']);
    expect(await of({ resource: 'volume', id: VOLUME })).toEqual(['volume/Created']);
    expect(await of({ resource: 'switchover' })).toEqual(['switchover/SwitchOverCompleted']);
    expect(await of({ id: 'node-1' })).toEqual(['node/Offline']);
  });

  it('takes every kind of resource an event can be about, switchovers included', async () => {
    expect(EVENT_RESOURCES).toContain('switchover');
    const r = await runStorctl(['events', '--resource', 'switchover', '--id', VOLUME, '-o', 'json'], {
      env: { STORCTL_STORE: storeUrl, STORCTL_CLUSTER_ID: space.clusterId },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject([
      { resource: 'switchover', id: VOLUME, action: 'SwitchOverCompleted' },
    ]);
  });
});
