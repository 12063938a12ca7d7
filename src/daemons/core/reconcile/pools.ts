import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { toSvcError } from '../svc-error.js';
import { pollNode } from './cache.js';

/**
 * Pool reconciler: a pool whose io-engine no longer reports it (the io-engine restarted) is
 * re-imported from its disk, never created; Deleting pools are destroyed and forgotten.
 */
export async function reconcilePools(ctx: CoreContext): Promise<boolean> {
  const { registry, engines, log } = ctx;
  let busy = false;
  for (const id of registry.poolImportFailed.keys())
    if (!registry.pools.has(id)) registry.poolImportFailed.delete(id);
  for (const p of [...registry.pools.values()]) {
    const engine = engines.tryGet(p.node);
    const polled = registry.polledPools.get(p.node);
    if (!engine || !polled || registry.isBusy('pool', p.id)) continue;
    if (p.status === 'Deleting') {
      try {
        await engine.destroyPool(p.id);
      } catch (err) {
        if (toSvcError(err).kind !== 'NotFound') continue;
      }
      await registry.persist({ deletePools: [p.id] });
      continue;
    }
    if (polled.has(p.id)) continue;
    busy = true;
    try {
      const st = await engine.importPool(p.id, p.disks[0]);
      registry.poolStates.set(p.id, st);
      registry.poolImportFailed.delete(p.id);
      polled.add(p.id);
      // Its replicas are seen now, not at the next poll (--cache-period): until then the volumes
      // they hold read Faulted, and a publish would not find them.
      await pollNode(ctx, p.node);
      await registry.persist({
        events: [makeEvent('pool', p.id, 'Imported', `re-imported on node ${p.node} from ${p.disks[0]}`)],
      });
    } catch (err) {
      const failed = toSvcError(err);
      // Its io-engine did not answer (it is going away or just restarting): not the pool's failure.
      if (failed.kind === 'Unavailable' || failed.kind === 'DeadlineExceeded') continue;
      // It has the pool: the poll that did not list it is older than the pool. Read it again.
      if (failed.kind === 'AlreadyExists') {
        await pollNode(ctx, p.node);
        continue;
      }
      // Retried every pass; said (log and event) once per reason.
      const why = failed.message;
      if (registry.poolImportFailed.get(p.id) === why) continue;
      registry.poolImportFailed.set(p.id, why);
      log.warn({ pool: p.id, node: p.node, err: why }, 'pool import failed');
      await registry
        .persist({
          events: [
            makeEvent(
              'pool',
              p.id,
              'ImportFailed',
              `not imported on node ${p.node} from ${p.disks[0]}: ${why}; its replicas are unavailable until it is (core tries again every pass); check the disk and the filesystem under it`,
            ),
          ],
        })
        .catch(() => {});
    }
  }
  return busy;
}
