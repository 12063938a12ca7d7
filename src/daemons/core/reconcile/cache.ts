import { IoEngineError } from '../../../lib/io-engine/client.js';
import type { CoreContext } from '../context.js';
import { perCore } from '../per-core.js';
import { toSvcError, withDeadline } from '../svc-error.js';

/** Poll every online io-engine for its pools, replicas and nexuses (Mayastor's cache poller). */
export async function pollEngines(ctx: CoreContext): Promise<void> {
  const { registry } = ctx;
  const nodes = [...new Set([...registry.nodeLive.keys(), ...registry.nodes.keys()])];
  await Promise.all(nodes.map((node) => pollNodeWithin(ctx, node)));
}

/**
 * How long a reconcile pass waits for one io-engine's poll. One that does not answer (stopped, cut
 * off) held the whole pass, every reconciler of every volume, until the request timed out: a node
 * that went Offline meanwhile was said 8 s late, and self-heal and target recreation elsewhere
 * waited as long, every cache period while it did not answer.
 */
const POLL_WAIT_MS = 2000;
/** Per core, per node: its poll still running, and the io-engine process it asked (its start time). */
const polling = perCore<{ poll: Promise<void>; instance: string | null }>();

/**
 * Poll `node`, waiting for it at most POLL_WAIT_MS: a slower poll goes on and lands when it is
 * answered, its node counted unanswering meanwhile (placement tries it last), and is not started
 * again while it runs, unless the node's io-engine has restarted since.
 */
export async function pollNodeWithin(ctx: CoreContext, node: string): Promise<void> {
  const running = polling(ctx);
  const instance = ctx.registry.nodeLive.get(node)?.startedAt ?? null;
  if (running.get(node)?.instance === instance) return;
  const poll = pollNode(ctx, node).finally(() => {
    if (running.get(node)?.poll === poll) running.delete(node);
  });
  running.set(node, { poll, instance });
  // pollNode never rejects: only the deadline does.
  const answered = await withDeadline(poll, POLL_WAIT_MS, `io-engine ${node} poll`).then(
    () => true,
    () => false,
  );
  if (!answered) ctx.registry.unanswering.add(node);
}

/** The online io-engines whose state no poll has read since they (re)started. */
export function unpolledNodes(ctx: CoreContext): string[] {
  const { registry } = ctx;
  return [...registry.nodeLive.keys()].filter((n) => registry.isOnline(n) && !registry.polledPools.has(n));
}

/** Poll one io-engine; an offline one's polled state is dropped. */
export async function pollNode(ctx: CoreContext, node: string): Promise<void> {
  const { registry, engines, log } = ctx;
  const engine = engines.tryGet(node);
  if (!engine) {
    registry.replicaStates.delete(node);
    registry.nexusStates.delete(node);
    registry.polledPools.delete(node);
    registry.unanswering.delete(node);
    return;
  }
  const version = registry.stateVersion.get(node) ?? 0;
  try {
    const [pools, replicas, nexuses] = await Promise.all([
      engine.listPools(),
      engine.listReplicas(),
      engine.listNexuses(),
    ]);
    if (pollFailures.delete(node)) log.info({ node }, 'io-engine poll works again');
    registry.unanswering.delete(node);
    const listed = new Set(pools.map((p) => p.id));
    registry.polledPools.set(node, listed);
    for (const p of pools) registry.poolStates.set(p.id, p);
    // A pool its io-engine no longer has (restarted, and not re-imported: its disk is gone) has no
    // state: its last figures would show it Online and let placement choose it.
    for (const p of registry.pools.values())
      if (p.node === node && !listed.has(p.id)) registry.poolStates.delete(p.id);
    if ((registry.stateVersion.get(node) ?? 0) !== version) return; // an operation changed it meanwhile
    registry.replicaStates.set(node, new Map(replicas.map((r) => [r.uuid, r])));
    registry.nexusStates.set(node, new Map(nexuses.map((n) => [n.uuid, n])));
  } catch (err) {
    // Said once per node and kind of failure (a deadline's message differs every time), not every
    // pass: until a poll works, core sees none of the node's replica or nexus state.
    const kind = err instanceof IoEngineError ? err.codeName : (err as Error).message;
    const silent = ['DeadlineExceeded', 'Unavailable'].includes(toSvcError(err).kind);
    if (silent) registry.unanswering.add(node);
    else registry.unanswering.delete(node);
    if (pollFailures.get(node) !== kind)
      log.warn(
        { node, err: (err as Error).message },
        'io-engine poll failed: core does not see its replicas and nexuses',
      );
    pollFailures.set(node, kind);
  }
}

/** Per node, why its last poll failed (absent: it worked). */
const pollFailures = new Map<string, string>();
