import { afterEach, describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';
import { call, OUTAGE_CORE_FLAGS, type Outage, scaleIntoOutage } from './store-outage.js';

const MiB = 1 << 20;

/**
 * Commit-on-result (docs/mayastor-compat.md §1.5): when the io-engine action succeeded but the commit write
 * failed, the operation keeps `result: true` in memory and is completed once the store is back, not
 * rolled back. The io-engine that makes the new replica is paused so that a real store outage
 * begins exactly between the stored intent and the commit.
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`an operation whose commit write failed is completed, not rolled back (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    let outage: Outage | undefined;
    afterEach(async () => {
      outage?.end();
      outage = undefined;
      for (const e of cluster?.engines ?? []) e.proc.child.kill('SIGCONT');
      await cluster?.stop();
      cluster = undefined;
    });

    it('a scale whose replica was made but whose commit failed ends with 2 replicas, data intact, no orphan', async () => {
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
      // Data first, through a target on the holder; then unpublished (the scale below needs no nexus).
      const pub = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: holder });
      await qemuIo(pub.state.target!.deviceUri, 'write -P 0x6b 0 2M', 'write -P 0x2d 6M 1M');
      await c.rest.unpublishVolume(id);

      const space = { clusterId: c.clusterId, namespace: 'default' };
      const volumeKey = objectKey(space, 'VolumeSpec', id);
      const store = await openStore(c.storeUrl);
      try {
        const into = await scaleIntoOutage(c, backend, store, id, holder);
        outage = into.outage;
        const first = await into.scale;
        expect(first.status).toBe(507);
        expect(first.body.kind).toBe('FailedPersist');

        // Dirty, and the pending operation is known to have succeeded.
        const dirty = await call(c.restUrl, 'GET', `/volumes/${id}`);
        expect(dirty.status).toBe(200);
        expect(dirty.body.spec.operation).toEqual({ operation: 'SetReplica', result: true });
        const refused = await call(c.restUrl, 'PUT', `/volumes/${id}/replica_count/1`);
        expect(refused.status).toBe(507);

        outage.end();
        outage = undefined;
        const settled = await waitFor(
          async () => {
            const v = (await call(c.restUrl, 'GET', `/volumes/${id}`)).body;
            return v.spec.operation ? null : v;
          },
          { what: 'pending operation completed', timeoutMs: 20_000 },
        );
        // Completed: the replica count the request asked for, stored, with both replicas Created.
        expect(settled.spec.num_replicas).toBe(2);
        const stored = JSON.parse((await store.get(volumeKey))!.value);
        expect(stored.operation).toBeNull();
        expect(stored.num_replicas).toBe(2);
        const { kvs } = await store.range(objectKey(space, 'ReplicaSpec', ''));
        const specs = kvs.map((kv) => JSON.parse(kv.value));
        expect(specs.map((r) => [r.owners.volume, r.status, r.operation])).toEqual([
          [id, { Created: 'online' }, null],
          [id, { Created: 'online' }, null],
        ]);
        const events = (await c.events()).join('\n');
        expect(events).toMatch(
          new RegExp(`"id":"${id}","action":"Recovered","message":"pending .*committed`),
        );

        // No orphan and nothing collected: both replicas online, one on each node, and exactly those
        // two exist on the io-engines, through more than one garbage-collection period (1 s, grace 2 s).
        let okSince = 0;
        let violation: string | undefined;
        await waitFor(
          async () => {
            const v = await c.rest.getVolume(id);
            const topo = Object.values(v.state.replica_topology);
            const onEngines = await c.rest.listReplicas();
            // Replica states may read Unknown for a moment while node liveness catches up after
            // the outage; what must hold throughout is which replicas exist.
            const ok =
              topo.length === 2 &&
              new Set(topo.map((r) => r.node)).size === 2 &&
              onEngines.length === 2 &&
              onEngines.every((r) => specs.some((s) => s.uuid === r.uuid));
            if (ok && !okSince && topo.every((r) => r.state === 'Online')) okSince = Date.now();
            if (!ok && okSince) violation ??= JSON.stringify({ topo, onEngines });
            return okSince && Date.now() - okSince > 4000;
          },
          { what: 'two replicas kept through garbage collection', timeoutMs: 20_000, intervalMs: 250 },
        );
        expect(violation).toBeUndefined();

        // Data intact, and the volume takes requests again.
        // The io-engines lost their liveness leases during the outage: each re-registers by itself
        // once the store is back (a lease lost while its write was blocked re-registers too).
        await waitFor(
          () =>
            c.rest.getNode(holder).then(
              (n) => n.state.status === 'Online',
              () => false,
            ),
          { what: 'holder online again', timeoutMs: 30_000 },
        );
        const again = await waitFor(
          () => c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: holder }),
          { what: 'publish accepted again', timeoutMs: 20_000, intervalMs: 500 },
        );
        await qemuIo(again.state.target!.deviceUri, 'read -P 0x6b 0 2M', 'read -P 0x2d 6M 1M');
      } catch (err) {
        console.log(c.cores.at(-1)?.output.split('\n').slice(-30).join('\n'));
        for (const e of c.engines)
          console.log(e.node, e.proc.running, e.proc.output.split('\n').slice(-8).join('\n'));
        console.log(JSON.stringify(await c.rest.listNodes().catch((e) => String(e))));
        throw err;
      } finally {
        await store.close();
      }
    }, 120_000);
  });
