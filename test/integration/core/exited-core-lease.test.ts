import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLeaseLock } from '../../../src/daemons/core/lease-lock.js';
import { releaseExitedCoreLease } from '../../../src/lib/core-lease.js';
import { createLogger } from '../../../src/lib/logger.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';

const log = createLogger('test', 'error');

/**
 * What `storctl up` does before starting a core again in place of one that exited: release the
 * store lease that core held, and only that one, so the new core takes over at once instead of
 * waiting out a TTL (here an hour).
 */
for (const backend of ['embedded', 'etcd'] as const) {
  describe(`releasing an exited core's store lease (${backend})`, () => {
    let dir: string;
    let etcd: EtcdServer | undefined;
    let store: Store;
    let n = 0;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'storctl-core-lease-'));
      if (backend === 'etcd') etcd = await startEtcd();
      store = await openStore(etcd ? etcd.url : `sqlite:${join(dir, 'store.db')}`);
    }, 60_000);
    afterAll(async () => {
      await store?.close();
      await etcd?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });
    const space = () => ({ clusterId: `c${++n}`, namespace: 'default' });

    it('revokes the lease the exited instance holds, and the next core takes the lock at once', async () => {
      const s = space();
      const held = await acquireLeaseLock(store, s, { ttlSeconds: 3600, instanceName: 'host-111', log });
      expect(await releaseExitedCoreLease(store, s, 'host-111')).toBe(held.lease.id);
      expect(await store.leaseTimeToLive(held.lease.id)).toBe(-1);
      const next = await acquireLeaseLock(store, s, {
        ttlSeconds: 3600,
        instanceName: 'host-222',
        log,
        signal: AbortSignal.timeout(10_000),
      });
      expect(next.lease.id).not.toBe(held.lease.id);
      await next.release();
    });

    it('leaves alone the lease of another instance, and a store with no core lease', async () => {
      const s = space();
      expect(await releaseExitedCoreLease(store, s, 'host-111')).toBeNull();
      const live = await acquireLeaseLock(store, s, { ttlSeconds: 3600, instanceName: 'host-333', log });
      expect(await releaseExitedCoreLease(store, s, 'host-111')).toBeNull();
      expect(await store.leaseTimeToLive(live.lease.id)).toBeGreaterThan(0);
      await live.release();
    });
  });
}
