import { randomUUID } from 'node:crypto';
import { localReplicaUri, replicaUuidOfUri } from '../../../lib/child-uri.js';
import type { NexusChild, NexusInfo, NexusSpec, ReplicaSpec, VolumeSpec } from '../../../lib/specs/index.js';
import { isCreated, nexusInfo } from '../../../lib/specs/index.js';
import { nexusInfoKey } from '../../../lib/store/keys.js';
import type { CoreContext } from '../context.js';
import type { NexusState } from '../engine-api.js';
import { replicaMayServe } from '../health.js';
import { SvcError } from '../svc-error.js';

/** The NexusInfo the io-engine persisted for a volume's last nexus, if any. */
export async function readNexusInfo(
  ctx: CoreContext,
  volume: VolumeSpec,
  nexusId: string | null,
): Promise<NexusInfo | null> {
  if (!nexusId) return null;
  const key = nexusInfoKey(ctx.registry.space, nexusId, volume.uuid);
  const kv = await ctx.registry.store.get(key);
  if (!kv) return null;
  try {
    return nexusInfo.decode(key, kv.value);
  } catch (err) {
    // Without it, which replicas hold the latest data is unknown: refuse rather than guess.
    throw new SvcError(
      'FailedPrecondition',
      `${(err as Error).message}; it records which replicas of volume '${volume.uuid}' are up to date: restore it (storctl store load) before publishing`,
    );
  }
}

/**
 * Replicas known to hold the volume's latest data: those its last nexus's NexusInfo records healthy
 * (all of them when no nexus ever recorded one), less, while it is published, the target's children
 * that core last saw other than Online (being rebuilt, or faulted).
 */
export async function upToDateReplicas(ctx: CoreContext, volume: VolumeSpec): Promise<Set<string>> {
  const info = await readNexusInfo(ctx, volume, volume.last_nexus_id);
  const ids = info
    ? info.children.filter((c) => c.healthy).map((c) => c.uuid)
    : ctx.registry.volumeReplicas(volume.uuid).map((r) => r.uuid);
  const target = volume.target?.active !== false ? volume.target : null;
  const live = target ? ctx.registry.nexusStates.get(target.node)?.get(target.nexus) : undefined;
  if (!live) return new Set(ids);
  const online = new Set(
    live.children.filter((c) => c.state === 'Online').map((c) => replicaUuidOfUri(c.uri)),
  );
  return new Set(ids.filter((id) => online.has(id)));
}

/**
 * Replicas a new nexus may use (docs/mayastor-compat.md §3.6): created replicas that may serve
 * (online, or their pool is still being re-imported; not one whose pool failed to import); when the
 * previous nexus left a NexusInfo, only its healthy children, and only one of them after an unclean
 * shutdown (the others are rebuilt from it afterwards).
 */
export async function usableReplicas(
  ctx: CoreContext,
  volume: VolumeSpec,
  targetNode: string,
): Promise<ReplicaSpec[]> {
  const { registry } = ctx;
  let candidates = registry
    .volumeReplicas(volume.uuid)
    .filter((r) => isCreated(r.status) && !r.operation && replicaMayServe(registry, r));
  const info = await readNexusInfo(ctx, volume, volume.last_nexus_id);
  if (info) {
    const healthy = new Set(info.children.filter((c) => c.healthy).map((c) => c.uuid));
    candidates = candidates.filter((r) => healthy.has(r.uuid));
    if (!info.clean_shutdown && candidates.length > 1) {
      const local = candidates.find((r) => registry.replicaNode(r) === targetNode);
      candidates = [local ?? candidates[0]];
    }
  }
  if (candidates.length === 0) {
    throw new SvcError(
      'FailedPrecondition',
      'No online replicas are available',
      info
        ? `volume ${volume.uuid}: NexusInfo has no healthy child on an online node; manual intervention required`
        : `volume ${volume.uuid}: no online replica`,
    );
  }
  return candidates;
}

/** The URI a nexus on `targetNode` uses for a replica: local bdev, or the replica shared remotely. */
export async function childUri(ctx: CoreContext, r: ReplicaSpec, targetNode: string): Promise<string> {
  const node = ctx.registry.replicaNode(r);
  if (!node) throw new SvcError('NotFound', `pool of replica ${r.uuid} not found`);
  if (node === targetNode) return localReplicaUri(r.uuid);
  return ctx.engines.get(node).shareReplica(r.uuid);
}

export function newNexusSpec(volume: VolumeSpec, node: string, uuid = randomUUID()): NexusSpec {
  return {
    uuid,
    name: volume.uuid,
    node,
    children: [],
    size: volume.size,
    spec_status: 'Creating',
    share: 'none',
    managed: true,
    owner: volume.uuid,
    operation: { operation: 'Create', result: null },
    nvmf_config: null,
    status_info: { shutdown_failed: false },
    allowed_hosts: [],
  };
}

/**
 * For an event: the replicas a new nexus came up without, Faulted because its node could not reach
 * them (an io-engine down, a network cut), and why; '' when it has them all.
 */
export function unreachedChildren(state: NexusState): string {
  const out = state.children.filter((c) => c.state === 'Faulted');
  if (!out.length) return '';
  const each = out.map((c) => `${replicaUuidOfUri(c.uri) ?? c.uri} (${c.reason ?? 'unreachable'})`);
  return `; Degraded: replica(s) ${each.join(', ')} could not be reached (Faulted: rebuilt once back, or replaced)`;
}

/**
 * Create the nexus on its node from the given replicas and share it over `protocol` (null: not
 * shared, as an unshared volume's target is recreated). A replica whose node cannot share it (its
 * io-engine died since core last saw it) is left out, as Mayastor's core does: the nexus serves from
 * the others, and the next heal rebuilds it; only when no replica can be shared does the build fail.
 * On any failure the nexus is destroyed again (rollback) and the error says what failed.
 */
export async function buildAndShareNexus(
  ctx: CoreContext,
  volume: VolumeSpec,
  nexus: NexusSpec,
  replicas: ReplicaSpec[],
  protocol: string | null,
): Promise<{ state: NexusState; uri: string; children: NexusChild[] }> {
  const engine = ctx.engines.get(nexus.node);
  const shared = await Promise.allSettled(replicas.map((r) => childUri(ctx, r, nexus.node)));
  const children: NexusChild[] = [];
  for (const [i, s] of shared.entries())
    if (s.status === 'fulfilled') children.push({ Replica: { uuid: replicas[i].uuid, share_uri: s.value } });
  if (children.length === 0) throw (shared[0] as PromiseRejectedResult).reason;
  const uris = children.map((c) => ('Replica' in c ? c.Replica.share_uri : c.Uri));
  const state = await engine.createNexus({
    uuid: nexus.uuid,
    size: volume.size,
    children: uris,
    nexusInfoKey: nexusInfoKey(ctx.registry.space, nexus.uuid, volume.uuid),
    volumeId: volume.uuid,
  });
  if (!protocol) return { state: { ...state, deviceUri: '', protocol: 'none' }, uri: '', children };
  try {
    const uri = await engine.publishNexus(nexus.uuid, protocol);
    return { state: { ...state, deviceUri: uri, protocol }, uri, children };
  } catch (err) {
    // Rollback of what this call created. A failed create is not destroyed here: the nexus may be
    // someone else's (AlreadyExists); one left half-made loses its spec and the nexus GC removes it.
    await engine.destroyNexus(nexus.uuid).catch(() => {});
    throw err;
  }
}
