import { afterEach, describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { call, OUTAGE_CORE_FLAGS, type Outage, scaleIntoOutage } from './store-outage.js';

const MiB = 1 << 20;

/**
 * A spec whose operation is logged but not committed (the commit write failed) is dirty: new
 * requests on it answer 507 FailedPersist (StoreDirty, docs/mayastor-compat.md §1.5/§2.3) until the persistent-store
 * reconciler settles it. The commit is made to fail by a real store outage, while the io-engine that
 * creates the new replica is paused so the outage begins exactly between intent and commit.
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`a spec with a pending operation answers new requests with 507 (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    let outage: Outage | undefined;
    afterEach(async () => {
      outage?.end();
      outage = undefined;
      for (const e of cluster?.engines ?? []) e.proc.child.kill('SIGCONT');
      await cluster?.stop();
      cluster = undefined;
    });

    it('a scale whose commit write fails leaves the volume dirty: 507 with the error body, then recovered', async () => {
      cluster = await TestCluster.start({ backend, engines: 2, coreFlags: OUTAGE_CORE_FLAGS });
      const c = cluster;
      const id = newVolumeId();
      const created = await c.rest.createVolume(id, {
        size: 8 * MiB,
        replicas: 1,
        thin: true,
        policy: { self_heal: false },
      });
      const holder = Object.values(created.state.replica_topology)[0].node!;
      const space = { clusterId: c.clusterId, namespace: 'default' };
      const volumeKey = objectKey(space, 'VolumeSpec', id);
      const store = await openStore(c.storeUrl);
      try {
        const into = await scaleIntoOutage(c, backend, store, id, holder);
        outage = into.outage;
        const first = await into.scale;
        expect(first.status).toBe(507);
        expect(first.body.kind).toBe('FailedPersist');

        // The volume is dirty: every new request on it is refused with 507 and Mayastor's body.
        for (const [method, path, body] of [
          ['PUT', `/volumes/${id}/target`, { protocol: 'nbd', publish_context: {} }],
          ['DELETE', `/volumes/${id}/target`, undefined],
          ['DELETE', `/volumes/${id}`, undefined],
          ['PUT', `/volumes/${id}/replica_count/2`, undefined],
        ] as const) {
          const r = await call(c.restUrl, method, path, body);
          expect({ method, path, status: r.status }).toEqual({ method, path, status: 507 });
          expect(Object.keys(r.body).sort()).toEqual(['details', 'kind', 'message']);
          expect(r.body.kind).toBe('FailedPersist');
          expect(r.body.message).toContain('pending operation');
          expect(r.body.details).toBe(`StoreDirty: volume ${id}`);
        }
        // Reads still answer, and show the pending operation.
        const dirty = await call(c.restUrl, 'GET', `/volumes/${id}`);
        expect(dirty.status).toBe(200);
        expect(dirty.body.spec.operation).toBeTruthy();

        // The store comes back: the persistent-store reconciler settles the operation (the replica was
        // made, so the result is true and the scale is completed, §1.5; commit-result.test.ts checks
        // the completion in detail), and the volume takes requests again.
        outage.end();
        outage = undefined;
        await waitFor(async () => !(await call(c.restUrl, 'GET', `/volumes/${id}`)).body.spec.operation, {
          what: 'pending operation reconciled',
          timeoutMs: 20_000,
        });
        const stored = JSON.parse((await store.get(volumeKey))!.value);
        expect(stored.operation).toBeNull();
        expect(stored.num_replicas).toBe(2);
        const again = await waitFor(
          async () => {
            const r = await call(c.restUrl, 'PUT', `/volumes/${id}/replica_count/1`);
            return r.status === 200 ? r : null;
          },
          { what: 'scale accepted again', timeoutMs: 30_000, intervalMs: 500 },
        );
        expect(again.body.spec.num_replicas).toBe(1);
        expect((await c.events()).some((e) => e.includes(`"id":"${id}","action":"Recovered"`))).toBe(true);
      } catch (err) {
        console.log(c.cores.at(-1)?.output.split('\n').slice(-30).join('\n'));
        throw err;
      } finally {
        await store.close();
      }
    }, 120_000);
  });
