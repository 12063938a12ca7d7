import { isCreated, type NodeSpec, type VolumeSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { addDrainingVolumes, markDrained, removeDrainingVolumes } from '../ops/pool-node.js';
import { publishVolume } from '../ops/volume-publish.js';
import { chooseTargetNode } from '../scheduler.js';
import { toSvcError } from '../svc-error.js';

const targetsOn = (ctx: CoreContext, node: string): VolumeSpec[] =>
  [...ctx.registry.volumes.values()].filter(
    (v) => v.target && v.target.active !== false && v.target.node === node,
  );

/**
 * Node drain (docs/mayastor-compat.md §4.3 NodeNexusReconciler): for each Draining node, the volumes whose target
 * (nexus) runs there are recorded in the NodeSpec's `draining_volumes` first (AddDrainingVolumes),
 * each is republished on another node, then removed from the list (RemoveDrainingVolumes); a node
 * with no target left and an empty list becomes Drained (SetDrained). A crash in between leaves the
 * list in the store: the next pass (or core) carries on from it.
 */
export async function drainNodes(ctx: CoreContext): Promise<boolean> {
  const { registry } = ctx;
  let busy = false;
  for (const n of [...registry.nodes.values()]) {
    const cds = n.cordon_drain_state;
    if (!cds || !('Draining' in cds)) continue;
    busy = true;
    await drainOneNode(ctx, n).catch((err) =>
      ctx.log.warn({ node: n.id, err: toSvcError(err).message }, 'drain step failed'),
    );
  }
  return busy;
}

/** Drains already told (by one event) that a volume's target has nowhere to go. */
const reportedBlocked = new Set<string>();

/** Why no other node can host the volume's target now, or null when one can. */
function noDestination(ctx: CoreContext, v: VolumeSpec, draining: string): string | null {
  const { registry } = ctx;
  const replicaNodes = registry
    .volumeReplicas(v.uuid)
    .map((r) => registry.replicaNode(r) ?? '')
    .filter((node) => registry.isOnline(node));
  try {
    chooseTargetNode(registry.nodeViews(), replicaNodes, undefined, [draining]);
    return null;
  } catch (err) {
    return toSvcError(err).message;
  }
}

async function drainOneNode(ctx: CoreContext, n: NodeSpec): Promise<void> {
  const { registry } = ctx;
  const targets = targetsOn(ctx, n.id);
  let spec = n;
  if (targets.length)
    spec = await addDrainingVolumes(
      ctx,
      n.id,
      targets.map((v) => v.uuid),
    );
  if (!spec.cordon_drain_state || !('Draining' in spec.cordon_drain_state)) return; // cancelled meanwhile
  for (const v of targets) {
    if (!isCreated(v.status) || v.operation || registry.isBusy('volume', v.uuid)) continue;
    // Republish tears the target down first: only start when another node can take it.
    const blocked = noDestination(ctx, v, n.id);
    if (blocked) {
      const key = `${n.id}/${v.uuid}`;
      if (!reportedBlocked.has(key)) {
        reportedBlocked.add(key);
        await registry.persist({
          events: [makeEvent('volume', v.uuid, 'DrainBlocked', `target stays on ${n.id}: ${blocked}`)],
        });
      }
      continue;
    }
    reportedBlocked.delete(`${n.id}/${v.uuid}`);
    try {
      const moved = await publishVolume(ctx, v.uuid, {
        // storctl io-engines serve NBD only, whatever protocol the stored target names.
        protocol: 'nbd',
        publish_context: v.publish_context ?? {},
        republish: true,
      });
      await registry.persist({
        events: [
          makeEvent(
            'volume',
            v.uuid,
            'Moved',
            `target moved off draining node ${n.id} to ${moved.target?.node}`,
          ),
        ],
      });
    } catch (err) {
      ctx.log.warn({ volume: v.uuid, node: n.id, err: toSvcError(err).message }, 'drain: republish failed');
    }
  }
  // Volumes listed that no longer have a target here (moved, unpublished, deleted) are done.
  const still = new Set(targetsOn(ctx, n.id).map((v) => v.uuid));
  const done = (registry.nodes.get(n.id)?.draining_volumes ?? []).filter((id) => !still.has(id));
  if (done.length) await removeDrainingVolumes(ctx, n.id, done);
  if (still.size === 0) await markDrained(ctx, n.id);
}
