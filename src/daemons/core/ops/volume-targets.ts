import { cloneSpec, type NexusSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { HUNG_ENGINE_WAIT_MS, toSvcError, withDeadline } from '../svc-error.js';

/**
 * Destroy the volume's nexuses that are not its current target (Mayastor `shutdown_targets`): old
 * targets left by a republish whose node was unreachable, or shut down ones. A nexus on an online
 * node is destroyed and its spec removed; one on an offline node, or one whose node does not answer
 * within HUNG_ENGINE_WAIT_MS, is marked Deleting and disowned, so the nexus garbage collector destroys
 * it when the node is back. Returns what was done.
 */
export async function shutdownStaleTargets(
  ctx: CoreContext,
  uuid: string,
): Promise<{ destroyed: string[]; deferred: string[] }> {
  const { registry, engines } = ctx;
  return registry.exclusive('volume', uuid, async () => {
    const volume = registry.volume(uuid);
    const current = volume.target && volume.target.active !== false ? volume.target.nexus : null;
    // A nexus of the volume is owned by it or, once disowned by a forced teardown, still named after it.
    const stale = [...registry.nexuses.values()].filter(
      (n) => (n.owner === uuid || n.name === uuid) && n.uuid !== current,
    );
    const destroyed: string[] = [];
    const deferred: NexusSpec[] = [];
    for (const n of stale) {
      const engine = engines.tryGet(n.node);
      if (!engine) {
        deferred.push({ ...cloneSpec(n), spec_status: 'Deleting', owner: null, operation: null });
        continue;
      }
      try {
        await withDeadline(
          engine.destroyNexus(n.uuid),
          HUNG_ENGINE_WAIT_MS,
          `node '${n.node}' did not answer`,
        );
      } catch (err) {
        const kind = toSvcError(err).kind;
        if (kind === 'Timeout') {
          // A hung node: left to the garbage collector as if offline, not waited on.
          deferred.push({ ...cloneSpec(n), spec_status: 'Deleting', owner: null, operation: null });
          continue;
        }
        if (kind !== 'NotFound') throw err;
      }
      registry.dropNexusState(n.node, n.uuid);
      destroyed.push(n.uuid);
      await registry.persist({
        deleteNexuses: [n.uuid],
        events: [makeEvent('nexus', n.uuid, 'Destroyed', `stale target of volume ${uuid} on node ${n.node}`)],
      });
    }
    if (deferred.length) await registry.persist({ nexuses: deferred });
    return { destroyed, deferred: deferred.map((n) => n.uuid) };
  });
}
