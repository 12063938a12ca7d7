import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLeaseLock } from '../../../src/daemons/core/lease-lock.js';
import { releaseExitedCoreLease } from '../../../src/lib/core-lease.js';
import { createLogger } from '../../../src/lib/logger.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { releaseLeasesOf } from '../../../src/lib/up/cluster.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { waitFor } from '../../helpers/wait.js';

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

    if (backend === 'etcd')
      it("up releases a lease it could not while the store was down once the store is back (etcd's restart renews every lease)", async () => {
        const s = space();
        const held = await acquireLeaseLock(store, s, { ttlSeconds: 3600, instanceName: 'host-444', log });
        const o = { storeUrl: etcd!.url, clusterId: s.clusterId, namespace: s.namespace };
        const pending = new Set(['host-444']);
        await etcd!.halt();
        expect(await releaseLeasesOf(o, pending)).toBeNull();
        expect([...pending]).toEqual(['host-444']);
        await etcd!.resume();
        expect(await releaseLeasesOf(o, pending)).toBe(
          `core: released the store lease ${held.lease.id} of the core that exited, so the next one takes over at once`,
        );
        expect(pending.size).toBe(0);
        expect(await store.leaseTimeToLive(held.lease.id)).toBe(-1);
      }, 60_000);

    it('a core waiting for the lease says which instance holds it and when its lease ends unless renewed', async () => {
      const s = space();
      const held = await acquireLeaseLock(store, s, { ttlSeconds: 3600, instanceName: 'host-555', log });
      const said: unknown[] = [];
      const listening = { info: (fields: unknown, msg: string) => said.push({ ...(fields as object), msg }) };
      const waiting = acquireLeaseLock(store, s, {
        ttlSeconds: 3600,
        instanceName: 'host-666',
        log: listening as unknown as typeof log,
      });
      await waitFor(() => said.length > 0, { what: 'the waiting core said so' });
      expect(said[0]).toEqual({
        msg: 'another core holds the lease; waiting to take over',
        holder: held.lease.id,
        instance: 'host-555',
        expiresInS: expect.any(Number),
      });
      expect((said[0] as { expiresInS: number }).expiresInS).toBeGreaterThan(3000);
      await held.release();
      await (await waiting).release();
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
