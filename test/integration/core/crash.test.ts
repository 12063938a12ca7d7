import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { checkConsistency } from './invariants.js';

const MiB = 1 << 20;

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core crash safety: kill -9 during 200 concurrent operations (${backend} store)`, () => {
    let cluster: TestCluster;
    beforeAll(async () => {
      cluster = await TestCluster.start({ backend });
    }, 90_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('after each restart every volume is fully created or gone, with nothing orphaned or pending', async () => {
      const ids = Array.from({ length: 100 }, () => newVolumeId());
      const outcomes = { ok: 0, failed: 0 };
      for (let round = 0; round < 3; round++) {
        const core = cluster.cores.at(-1)!;
        const rest = cluster.rest;
        // 200 operations at once: creates + publishes for half the ids, deletes + re-creates for the rest.
        const ops = ids.map(async (id, i) => {
          const run = async (f: () => Promise<unknown>) => {
            try {
              await f();
              outcomes.ok++;
            } catch {
              outcomes.failed++;
            }
          };
          if ((i + round) % 2 === 0) {
            await run(() =>
              rest.createVolume(id, {
                size: 4 * MiB,
                replicas: 1 + (i % 3),
                thin: true,
                policy: { self_heal: true },
              }),
            );
            await run(() => rest.publishVolume(id, { protocol: 'nbd', publish_context: {} }));
          } else {
            await run(() => rest.deleteVolume(id));
            await run(() =>
              rest.createVolume(id, { size: 4 * MiB, replicas: 2, thin: true, policy: { self_heal: true } }),
            );
          }
        });
        const all = Promise.all(ops);
        if (round < 2) {
          // kill -9 at a random point while the operations are in flight.
          await new Promise((r) => setTimeout(r, 150 + Math.floor(Math.random() * 600)));
          core.child.kill('SIGKILL');
          await core.wait();
          await all;
          await cluster.startCore();
        } else {
          await all;
        }
        const result = await waitFor(
          async () => {
            const r = await checkConsistency(cluster);
            return r.violations.length === 0 ? r : null;
          },
          { timeoutMs: 60_000, intervalMs: 500, what: `consistency after round ${round}` },
        ).catch(async (err) => {
          const r = await checkConsistency(cluster);
          const id = /[0-9a-f-]{36}/.exec(r.violations[0] ?? '')?.[0] ?? '';
          const history = (await cluster.events()).filter((e) => e.includes(id));
          throw new Error(
            `${(err as Error).message}\n${r.violations.slice(0, 60).join('\n')}\nevents of ${id}:\n${history.join('\n')}`,
          );
        });
        expect(result.violations).toEqual([]);
      }
      expect(outcomes.ok).toBeGreaterThan(100);
      // The kills did land on operations in flight: some were recovered at restart.
      expect((await cluster.events()).some((e) => e.includes('"Recovered"'))).toBe(true);
    }, 300_000);
  });
}
