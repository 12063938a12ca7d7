import { afterEach, describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { call, OUTAGE_CORE_FLAGS, type Outage, storeOutage } from './store-outage.js';

const MiB = 1 << 20;

/**
 * The reconcilers are slowed right down: the retried request itself must settle what the failed
 * write left, not the persistent-store reconciler before it (which would make the test pass either way).
 */
const SLOW_RECONCILE = OUTAGE_CORE_FLAGS.map((f, i, a) =>
  a[i - 1] === '--reconcile-period' || a[i - 1] === '--reconcile-idle-period' ? '10m' : f,
);

const body = { size: 8 * MiB, replicas: 1, thin: true, policy: { self_heal: false } };

/**
 * Retries that converge (issue 16): a request answered 507 ("may or may not have been applied") is
 * retried with the same parameters and ends where the first attempt would have — the create returns
 * the volume it made, the delete finishes — instead of answering 422 AlreadyExists. The 507 is real:
 * the io-engine is paused until the operation's intent is stored, then the store goes out, so the
 * commit write fails after the io-engine acted.
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`a request answered 507 is retried to the same end (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    let outage: Outage | undefined;
    let store: Store | undefined;
    afterEach(async () => {
      outage?.end();
      outage = undefined;
      for (const e of cluster?.engines ?? []) e.proc.child.kill('SIGCONT');
      await store?.close();
      store = undefined;
      await cluster?.stop();
      cluster = undefined;
    });

    /**
     * A request retried as a client retries a 507 ("may or may not have been applied"): again while
     * the answer is 507 — core may still be waiting on the write the outage held up.
     */
    async function retriedPast507(request: () => ReturnType<typeof call>): ReturnType<typeof call> {
      let answer = await request();
      await waitFor(
        async () => {
          if (answer.status !== 507) return true;
          answer = await request();
          return answer.status !== 507;
        },
        { what: 'an answer other than 507 to the retried request', timeoutMs: 20_000, intervalMs: 200 },
      );
      return answer;
    }

    /** Run `request` with the io-engine paused until `intent` holds in the store, then the store out. */
    async function into507(
      c: TestCluster,
      request: () => ReturnType<typeof call>,
      intent: () => Promise<boolean>,
    ): Promise<Awaited<ReturnType<typeof call>>> {
      const engine = c.engines[0].proc.child;
      engine.kill('SIGSTOP');
      const answer = request();
      await waitFor(intent, { what: 'the operation intent stored', timeoutMs: 10_000 });
      outage = storeOutage(c, backend);
      outage.begin();
      engine.kill('SIGCONT');
      const first = await answer;
      expect({ status: first.status, kind: first.body.kind }).toEqual({ status: 507, kind: 'FailedPersist' });
      return first;
    }

    it('create answered 507 → identical retry returns the volume; different parameters conflict; delete answered 507 → the retry finishes it, then 404', async () => {
      cluster = await TestCluster.start({ backend, engines: 1, coreFlags: SLOW_RECONCILE });
      const c = cluster;
      store = await openStore(c.storeUrl);
      const s = store;
      const space = { clusterId: c.clusterId, namespace: 'default' };
      const id = newVolumeId();
      const stored = async () => {
        const kv = await s.get(objectKey(space, 'VolumeSpec', id));
        return kv ? JSON.parse(kv.value) : null;
      };

      await into507(
        c,
        () => call(c.restUrl, 'PUT', `/volumes/${id}`, body),
        async () => (await stored())?.operation?.operation === 'Create',
      );
      // While the store is still out the retry cannot settle anything: 507 again, still retryable.
      const during = await call(c.restUrl, 'PUT', `/volumes/${id}`, body);
      expect({ status: during.status, kind: during.body.kind }).toEqual({
        status: 507,
        kind: 'FailedPersist',
      });
      expect(during.body.message).toMatch(/pending operation.*retry/);

      outage!.end();
      outage = undefined;
      const retried = await retriedPast507(() => call(c.restUrl, 'PUT', `/volumes/${id}`, body));
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      expect(retried.body.spec).toMatchObject({
        uuid: id,
        size: 8 * MiB,
        num_replicas: 1,
        status: 'Created',
      });
      await waitFor(
        async () => (await call(c.restUrl, 'GET', `/volumes/${id}`)).body.state.status === 'Online',
        {
          what: 'the volume Online',
        },
      );
      expect((await stored()).operation).toBeNull();
      // It was settled by the retry (the reconcilers are slowed to 10 minutes), and said so.
      expect(
        (await c.events()).some((e) => e.includes(id) && e.includes('Create committed on a retried request')),
      ).toBe(true);
      // Once more: the same volume, nothing new made.
      const again = await call(c.restUrl, 'PUT', `/volumes/${id}`, body);
      expect(again.status).toBe(200);
      expect(again.body.spec).toEqual(retried.body.spec);
      const replicas = async () =>
        (await s.range(objectKey(space, 'ReplicaSpec', ''))).kvs
          .map((kv) => JSON.parse(kv.value))
          .filter((r) => r.owners.volume === id);
      expect(await replicas()).toHaveLength(1);

      // Different parameters: a conflict that says which differ and what to do.
      const bigger = await call(c.restUrl, 'PUT', `/volumes/${id}`, { ...body, size: 16 * MiB, replicas: 2 });
      expect({ status: bigger.status, kind: bigger.body.kind }).toEqual({
        status: 422,
        kind: 'AlreadyExists',
      });
      expect(bigger.body.message).toContain(`size is ${8 * MiB}, requested ${16 * MiB}`);
      expect(bigger.body.message).toContain('replicas is 1, requested 2');
      expect(bigger.body.message).toContain('delete it first or use another id');
      const labelled = await call(c.restUrl, 'PUT', `/volumes/${id}`, { ...body, labels: { app: 'x' } });
      expect(labelled.status).toBe(422);
      expect(labelled.body.message).toContain('labels is null, requested {"app":"x"}');

      // Delete answered 507 after the io-engine destroyed the replica: the retry finishes it.
      await into507(
        c,
        () => call(c.restUrl, 'DELETE', `/volumes/${id}`),
        async () => (await stored())?.operation?.operation === 'Destroy',
      );
      outage!.end();
      outage = undefined;
      // The intent is stored and its commit is not — or, on etcd, the commit sent before the pause
      // was applied when etcd resumed, after core had answered 507: "may or may not have been applied".
      const left = await stored();
      expect(left === null || left.operation?.operation === 'Destroy', JSON.stringify(left)).toBe(true);
      // The retry finishes the delete (204); 404 when the commit the outage held up landed after all
      // (the embedded store's write waits out the lock; etcd applies what it had received).
      const deleted = await retriedPast507(() => call(c.restUrl, 'DELETE', `/volumes/${id}`));
      expect([204, 404], JSON.stringify(deleted.body)).toContain(deleted.status);
      expect(await stored()).toBeNull();
      expect(await replicas()).toEqual([]);
      // Gone: a further delete answers 404 as Mayastor's does (CSI's DeleteVolume takes it as done).
      const gone = await call(c.restUrl, 'DELETE', `/volumes/${id}`);
      expect({ status: gone.status, kind: gone.body.kind }).toEqual({ status: 404, kind: 'NotFound' });
      expect(gone.body.message).toContain('deleted already, or never created');
      // And a create with the same id makes it anew (once the io-engine, whose liveness lapsed in
      // the outage, is online again to place the replica).
      await waitFor(
        async () => (await call(c.restUrl, 'GET', '/nodes/node-1')).body.state?.status === 'Online',
        {
          what: 'node-1 online again',
        },
      );
      const anew = await call(c.restUrl, 'PUT', `/volumes/${id}`, body);
      expect(anew.status, JSON.stringify(anew.body)).toBe(200);
    }, 120_000);
  });

describe('creates of pools, replicas and snapshots retried with the same parameters converge', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it('the same create again answers 200 with what exists; different parameters 422 naming the difference', async () => {
    cluster = await TestCluster.start({ engines: 1 });
    const c = cluster;
    const pool = (await c.rest.listPools())[0];
    const disks = pool.spec!.disks;

    // Pool: the same node, disks and labels → the pool; another disk → conflict.
    const samePool = await call(c.restUrl, 'PUT', `/nodes/node-1/pools/${pool.id}`, { disks });
    expect(samePool.status).toBe(200);
    expect(samePool.body.id).toBe(pool.id);
    const otherDisk = await call(c.restUrl, 'PUT', `/nodes/node-1/pools/${pool.id}`, {
      disks: [`${disks[0]}-other`],
    });
    expect({ status: otherDisk.status, kind: otherDisk.body.kind }).toEqual({
      status: 422,
      kind: 'AlreadyExists',
    });
    expect(otherDisk.body.message).toContain('its disks are');

    // Replica: the same pool, size and thin → the replica; another size → conflict.
    const rid = newVolumeId();
    const rbody = { size: 4 * MiB, thin: true };
    const r1 = await call(c.restUrl, 'PUT', `/pools/${pool.id}/replicas/${rid}`, rbody);
    expect(r1.status).toBe(200);
    const r2 = await call(c.restUrl, 'PUT', `/pools/${pool.id}/replicas/${rid}`, rbody);
    expect(r2.status).toBe(200);
    expect(r2.body).toEqual(r1.body);
    const r3 = await call(c.restUrl, 'PUT', `/pools/${pool.id}/replicas/${rid}`, { ...rbody, size: 8 * MiB });
    expect({ status: r3.status, kind: r3.body.kind }).toEqual({ status: 422, kind: 'AlreadyExists' });
    expect(r3.body.message).toContain(`size is ${4 * MiB}`);

    // Snapshot: the same volume and id → the snapshot (one, not a second transaction).
    const vid = newVolumeId();
    const sid = newVolumeId();
    await c.rest.createVolume(vid, body);
    const s1 = await call(c.restUrl, 'PUT', `/volumes/${vid}/snapshots/${sid}`);
    expect(s1.status).toBe(200);
    const s2 = await call(c.restUrl, 'PUT', `/volumes/${vid}/snapshots/${sid}`);
    expect(s2.status).toBe(200);
    expect(s2.body.definition).toEqual(s1.body.definition);
    // A clone retried with the same parameters: the clone.
    const cid = newVolumeId();
    const cl1 = await call(c.restUrl, 'PUT', `/snapshots/${sid}/volumes/${cid}`, body);
    expect(cl1.status).toBe(200);
    const cl2 = await call(c.restUrl, 'PUT', `/snapshots/${sid}/volumes/${cid}`, body);
    expect(cl2.status, JSON.stringify(cl2.body)).toBe(200);
    expect(cl2.body.spec).toEqual(cl1.body.spec);
    // A plain create of the clone's id is not the same request: content_source differs.
    const plain = await call(c.restUrl, 'PUT', `/volumes/${cid}`, body);
    expect(plain.status).toBe(422);
    expect(plain.body.message).toContain('content_source is');
  }, 90_000);
});
