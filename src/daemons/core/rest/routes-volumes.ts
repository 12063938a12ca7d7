import type { VolumeSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { createCloneVolume } from '../ops/clone.js';
import { createSnapshot, deleteSnapshot } from '../ops/snapshot.js';
import { createVolume } from '../ops/volume-create.js';
import { deleteVolume } from '../ops/volume-delete.js';
import { setVolumeProperty } from '../ops/volume-property.js';
import { publishVolume, unpublishVolume } from '../ops/volume-publish.js';
import { resizeVolume, scaleVolume } from '../ops/volume-scale.js';
import { shareProtocol, shareVolume, unshareVolume } from '../ops/volume-share.js';
import { shutdownStaleTargets } from '../ops/volume-targets.js';
import type { RebuildHistory } from '../rebuild-history.js';
import { HUNG_ENGINE_WAIT_MS, notFound, SvcError, withDeadline } from '../svc-error.js';
import { snapshotOut, volumeOut } from './present.js';
import type { RestRequest, Router } from './router.js';
import {
  asObject,
  createVolumeBody,
  frontendNodeParam,
  int,
  publishVolumeBody,
  reqInt,
  uuidParam,
} from './validate.js';
import { boolQuery } from './validate-resources.js';

/**
 * Offset pagination over the insertion-ordered spec map (docs/mayastor-compat.md §2.1). Takes any
 * iterable: a page of a map's values is read without copying the map into an array first (100k
 * volumes: 800 KB of garbage per page).
 */
export function paginate<T>(items: Iterable<T>, q: URLSearchParams): { entries: T[]; next_token?: number } {
  const max = q.get('max_entries');
  if (max === null)
    throw new SvcError('InvalidArgument', "query parameter 'max_entries' is required (0 = no pagination)");
  const maxEntries = int(Number(max), 'max_entries', 0);
  const start =
    q.get('starting_token') === null ? 0 : int(Number(q.get('starting_token')), 'starting_token', 0);
  const entries: T[] = [];
  let index = 0;
  for (const item of items) {
    if (index++ < start) continue;
    if (maxEntries > 0 && entries.length === maxEntries) return { entries, next_token: start + maxEntries };
    entries.push(item);
  }
  return { entries };
}

/**
 * A single-volume read asks the target's io-engine for fresh nexus state (rebuild progress), but
 * not for long: HA reads the volume before switching its target away from a hung io-engine.
 */
async function refreshTarget(ctx: CoreContext, v: VolumeSpec): Promise<void> {
  if (!v.target || v.target.active === false) return;
  const engine = ctx.engines.tryGet(v.target.node);
  if (!engine) return;
  try {
    const st = await withDeadline(engine.getNexus(v.target.nexus), HUNG_ENGINE_WAIT_MS, 'no nexus state');
    ctx.registry.setNexusState(v.target.node, st);
  } catch {
    // keep the cached state
  }
}

const vid = (req: RestRequest) => uuidParam(req.params.volume_id, 'volume_id');

/** `DELETE /volumes{volume_id}/share`: the path as Mayastor's spec misprints it (no slash). */
const TYPO_VOLUME_RE = /^volumes([0-9a-fA-F-]{36})$/;

export function volumeRoutes(router: Router, ctx: CoreContext, rebuilds?: RebuildHistory): void {
  const reg = ctx.registry;
  const unshare = async (id: string) => {
    await unshareVolume(ctx, id);
    return { status: 204 };
  };
  router
    .add('GET', '/volumes', async (req) => {
      const filter = req.query.get('volume_id')?.toLowerCase() || undefined;
      const one = filter === undefined ? undefined : reg.volumes.get(filter);
      const page = paginate(filter === undefined ? reg.volumes.values() : one ? [one] : [], req.query);
      return {
        status: 200,
        body: { entries: page.entries.map((v) => volumeOut(reg, v)), next_token: page.next_token },
      };
    })
    .add('GET', '/volumes/:volume_id', async (req) => {
      const v = reg.volume(vid(req));
      await refreshTarget(ctx, v);
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('PUT', '/volumes/:volume_id', async (req) => {
      const id = vid(req);
      const v = await createVolume(ctx, id, createVolumeBody(req.body));
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('DELETE', '/volumes/:volume_id', async (req) => {
      await deleteVolume(ctx, vid(req), { ifUnpublished: boolQuery(req.query, 'if_unpublished') });
      return { status: 204 };
    })
    .add('PUT', '/volumes/:volume_id/target', async (req) => {
      const v = await publishVolume(ctx, vid(req), publishVolumeBody(req.body));
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('DELETE', '/volumes/:volume_id/target', async (req) => {
      const v = await unpublishVolume(ctx, vid(req), boolQuery(req.query, 'force'));
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('PUT', '/volumes/:volume_id/replica_count/:replica_count', async (req) => {
      const n = int(Number(req.params.replica_count), 'replica_count', 1, 255);
      const v = await scaleVolume(ctx, vid(req), n);
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('PUT', '/volumes/:volume_id/size', async (req) => {
      const size = reqInt(asObject(req.body, 'body'), 'size', 'size', 1);
      const v = await resizeVolume(ctx, vid(req), size);
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('PUT', '/volumes/:volume_id/property', async (req) => {
      const body = asObject(req.body, 'body');
      const max = reqInt(body, 'max_snapshots', 'max_snapshots', 0, 0xffffffff);
      const v = await setVolumeProperty(ctx, vid(req), { max_snapshots: max });
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('PUT', '/volumes/:volume_id/share/:protocol', async (req) => {
      const id = vid(req);
      const protocol = shareProtocol(req.params.protocol);
      const host = req.query.get('frontend_host');
      const uri = await shareVolume(
        ctx,
        id,
        protocol,
        host ? frontendNodeParam(host, 'frontend_host') : undefined,
      );
      return { status: 200, body: uri };
    })
    .add('DELETE', '/volumes/:volume_id/share', async (req) => unshare(vid(req)))
    .add('DELETE', '/volumes/:volume_id/shutdown_targets', async (req) => {
      await shutdownStaleTargets(ctx, vid(req));
      return { status: 204 };
    })
    .add('GET', '/volumes/:volume_id/rebuild-history', async (req) => {
      const v = reg.volume(vid(req));
      if (!v.target || v.target.active === false)
        throw new SvcError('NotPublished', `volume '${v.uuid}' is not published: it has no target nexus`);
      await refreshTarget(ctx, v);
      return {
        status: 200,
        body: { targetUuid: v.target.nexus, records: rebuilds?.of(v.target.nexus) ?? [] },
      };
    })
    .add('PUT', '/snapshots/:snapshot_id/volumes/:volume_id', async (req) => {
      const v = await createCloneVolume(
        ctx,
        uuidParam(req.params.snapshot_id, 'snapshot_id'),
        vid(req),
        createVolumeBody(req.body),
      );
      return { status: 200, body: volumeOut(reg, v) };
    })
    .add('GET', '/volumes/snapshots', async (req) => {
      let snaps = [...reg.snapshots.values()];
      const sid = req.query.get('snapshot_id');
      const vol = req.query.get('volume_id');
      if (sid) snaps = snaps.filter((s) => s.spec.uuid === sid);
      if (vol) snaps = snaps.filter((s) => s.spec.source_id === vol);
      const page = paginate(snaps, req.query);
      return {
        status: 200,
        body: { entries: page.entries.map((s) => snapshotOut(reg, s)), next_token: page.next_token },
      };
    })
    .add('GET', '/volumes/snapshots/:snapshot_id', async (req) => {
      const s = reg.snapshots.get(uuidParam(req.params.snapshot_id, 'snapshot_id'));
      if (!s) throw notFound('snapshot', req.params.snapshot_id);
      return { status: 200, body: snapshotOut(reg, s) };
    })
    .add('DELETE', '/volumes/snapshots/:snapshot_id', async (req) => {
      await deleteSnapshot(ctx, null, uuidParam(req.params.snapshot_id, 'snapshot_id'));
      return { status: 204 };
    })
    .add('GET', '/volumes/:volume_id/snapshots', async (req) => {
      const id = vid(req);
      const page = paginate(reg.volumeSnapshots(id), req.query);
      return {
        status: 200,
        body: { entries: page.entries.map((s) => snapshotOut(reg, s)), next_token: page.next_token },
      };
    })
    .add('GET', '/volumes/:volume_id/snapshots/:snapshot_id', async (req) => {
      const s = reg.snapshots.get(uuidParam(req.params.snapshot_id, 'snapshot_id'));
      if (!s || s.spec.source_id !== vid(req)) throw notFound('snapshot', req.params.snapshot_id);
      return { status: 200, body: snapshotOut(reg, s) };
    })
    .add('PUT', '/volumes/:volume_id/snapshots/:snapshot_id', async (req) => {
      const s = await createSnapshot(ctx, vid(req), uuidParam(req.params.snapshot_id, 'snapshot_id'));
      return { status: 200, body: snapshotOut(reg, s) };
    })
    .add('DELETE', '/volumes/:volume_id/snapshots/:snapshot_id', async (req) => {
      await deleteSnapshot(ctx, vid(req), uuidParam(req.params.snapshot_id, 'snapshot_id'));
      return { status: 204 };
    })
    .add('DELETE', '/:volumes_id/share', async (req) => {
      const m = TYPO_VOLUME_RE.exec(req.params.volumes_id);
      if (!m) throw new SvcError('NotFound', `no such endpoint: DELETE /${req.params.volumes_id}/share`);
      return unshare(uuidParam(m[1], 'volume_id'));
    });
}
