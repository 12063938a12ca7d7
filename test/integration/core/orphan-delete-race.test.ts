import { afterAll, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { replicaSpec } from '../../../src/lib/specs/index.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { managedReplicaSpec } from '../../helpers/specs.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, coreFlags, newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

/**
 * Reconciler passes every few hundred ms, but no GC (the orphan goes only by the delete asked for),
 * no io-engine polling after the first pass (a pass would wait on the held io-engine), and an
 * io-engine call deadline long enough for the delete to stay in flight.
 */
const CORE_FLAGS = coreFlags({
  '--gc-period': '1h',
  '--replica-gc-grace': '1h',
  '--cache-period': '1h',
  '--request-timeout': '60s',
});

/*
 * A managed replica whose volume is gone is deleted through REST (what `storctl orphans --delete`
 * does) under the replica's own lock, while core's dirty-spec reconciler looks for specs left with
 * an operation by a failed write. It took the lock of the volume the spec names, which no operation
 * holds when that volume is gone, and "fixed" the spec of the delete in flight; a fix landing after
 * the delete brought the spec back (seen in CI as an orphan listed again after `orphans --delete`).
 * The io-engine is held (SIGSTOP) so the delete stays in flight across reconciler passes.
 */
for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`an orphan's delete in flight and core's dirty-spec reconciler (${backend} store)`, () => {
    let c: TestCluster | undefined;
    let store: Store | undefined;
    afterAll(async () => {
      c?.engine('node-1').proc.child.kill('SIGCONT');
      await store?.close();
      await c?.stop();
    }, 60_000);

    it('leaves the delete alone: the spec keeps its Destroy operation until the delete ends it, and stays gone', async () => {
      c = await TestCluster.start({ backend, engines: 1, coreFlags: CORE_FLAGS });
      const cluster = c;
      const replica = crypto.randomUUID();
      const missing = newVolumeId();
      const engine = new IoEngineClient(cluster.engine('node-1').grpc);
      try {
        await engine.createReplica({ uuid: replica, pool: 'pool-node-1', size: 4 * MiB, thin: true });
      } finally {
        engine.close();
      }
      // The spec as a crash leaves it, written while core is stopped (core reads the store at start).
      await cluster.cores[0].kill('SIGTERM');
      store = await openStore(cluster.storeUrl);
      const s = store;
      const key = objectKey(cluster.space, 'ReplicaSpec', replica);
      await s.put(key, replicaSpec.encode(managedReplicaSpec(replica, 'pool-node-1', missing)));
      const core = await cluster.startCore(CORE_FLAGS);
      const url = metricsUrl(core);
      expect(url, core.output).toBeTruthy();
      const passes = () => reconcilerRuns(url!, 'persistent-store');
      const stored = async () => {
        const kv = await s.get(key);
        return kv
          ? (JSON.parse(kv.value) as { status: unknown; operation: { operation: unknown } | null })
          : null;
      };
      await waitFor(async () => (await cluster.rest.listReplicas()).some((r) => r.uuid === replica), {
        what: 'core knowing the orphaned replica',
      });

      const held = cluster.engine('node-1').proc.child;
      held.kill('SIGSTOP');
      const deleting = cluster.rest.deleteReplica('pool-node-1', replica);
      deleting.catch(() => {}); // awaited below, unless an expectation fails first
      try {
        await waitFor(async () => (await stored())?.operation?.operation === 'Destroy', {
          what: 'the delete logged in the spec',
        });
        const before = await passes();
        await waitFor(async () => (await passes()) >= before + 2, {
          what: 'two passes of the dirty-spec reconciler',
          timeoutMs: 30_000,
        });
        // Still the delete's: not rolled back or settled by the reconciler meanwhile.
        expect(await stored()).toMatchObject({ status: 'Deleting', operation: { operation: 'Destroy' } });
      } finally {
        held.kill('SIGCONT');
      }
      await deleting;
      expect(await stored()).toBeNull();
      const after = await passes();
      await waitFor(async () => (await passes()) >= after + 2, { what: 'two more reconciler passes' });
      expect(await stored()).toBeNull();
      expect((await cluster.rest.listReplicas()).map((r) => r.uuid)).not.toContain(replica);
    }, 120_000);
  });
}
