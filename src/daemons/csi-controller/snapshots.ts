import { status } from '@grpc/grpc-js';
import { requireString } from '../../lib/csi/validate.js';
import { GrpcError } from '../../lib/grpc/status.js';
import type { Volume, VolumeSnapshot } from '../../lib/rest/types.js';
import { checkPage, type Deps, notFound, orNotFound, parseMaxEntries, parseToken, rpc } from './context.js';
import { NodeFsClient } from './freeze.js';
import { snapshotKey, volumeKey } from './guard.js';
import { checkKnownKeys, isUuid, parseQuiesce, SNAPSHOT_PARAMS, snapshotIdOfName } from './params.js';
import { csiSnapshot, publishedNodes } from './present.js';

type Frozen = { node: string; client: NodeFsClient };

export function snapshotService(deps: Deps) {
  const { rest, guard, log, config } = deps;

  /**
   * Freeze the volume's filesystem on each node it is published to whose csi-node registered an
   * endpoint. A node where it is not staged as a filesystem (NOT_FOUND, FAILED_PRECONDITION) is
   * skipped; any other failure thaws what was frozen and fails the snapshot before it is taken.
   */
  async function freeze(v: Volume): Promise<Frozen[]> {
    const frozen: Frozen[] = [];
    for (const node of publishedNodes(v)) {
      const app = await orNotFound(rest.getAppNode(node));
      if (!app) {
        log.info({ volume: v.spec.uuid, node }, 'no csi-node endpoint registered: snapshot without freeze');
        continue;
      }
      const client = new NodeFsClient(app.spec.endpoint, config.freezeTimeoutMs);
      try {
        await client.freeze(v.spec.uuid, config.freezeTimeoutMs);
        frozen.push({ node, client });
      } catch (err) {
        client.close();
        const e = err as { code?: number; details?: string; message: string };
        if (e.code === status.NOT_FOUND || e.code === status.FAILED_PRECONDITION) {
          log.info(
            { volume: v.spec.uuid, node, why: e.details },
            'not staged as a filesystem there: no freeze',
          );
          continue;
        }
        await thaw(v.spec.uuid, frozen);
        throw new GrpcError(
          e.code === status.UNAVAILABLE || e.code === status.DEADLINE_EXCEEDED
            ? status.UNAVAILABLE
            : status.INTERNAL,
          `could not freeze the filesystem of volume '${v.spec.uuid}' on node '${node}' (${app.spec.endpoint}): ${e.details ?? e.message}; no snapshot taken`,
        );
      }
    }
    return frozen;
  }

  /** Always after a freeze; a failed thaw is logged (the node thaws by itself after its timeout). */
  async function thaw(volumeId: string, frozen: Frozen[]): Promise<void> {
    for (const f of frozen) {
      try {
        await f.client.unfreeze(volumeId);
      } catch (err) {
        log.error(
          { volume: volumeId, node: f.node, err: (err as Error).message },
          'unfreeze failed; the csi-node thaws it after its timeout',
        );
      } finally {
        f.client.close();
      }
    }
  }

  const CreateSnapshot = rpc(
    deps,
    'CreateSnapshot',
    async (req: { source_volume_id: string; name: string; parameters: Record<string, string> }) => {
      const source = requireString(req.source_volume_id, 'source_volume_id');
      const name = requireString(req.name, 'name');
      const parameters = req.parameters ?? {};
      checkKnownKeys(parameters, SNAPSHOT_PARAMS, 'parameters');
      const quiesce = parseQuiesce(parameters.quiesceFs);
      const id = snapshotIdOfName(name);
      if (!isUuid(source)) throw notFound(`source volume '${source}' not found`);
      return guard.run([volumeKey(source), snapshotKey(id)], async () => {
        const existing = await orNotFound(rest.getSnapshot(id));
        if (existing) {
          if (existing.definition.spec.source_volume !== source)
            throw new GrpcError(
              status.ALREADY_EXISTS,
              `snapshot '${name}' (${id}) already exists for volume '${existing.definition.spec.source_volume}'`,
            );
          // One an earlier attempt left Creating (it failed part-way) is taken again, as core
          // allows: answering it as it is would keep the CO waiting for ready_to_use for good.
          if (existing.definition.metadata.status !== 'Creating') return { snapshot: csiSnapshot(existing) };
        }
        const v = await orNotFound(rest.getVolume(source));
        if (!v) throw notFound(`source volume '${source}' not found`);
        const frozen = quiesce === 'freeze' ? await freeze(v) : [];
        let snap: VolumeSnapshot;
        try {
          snap = await rest.createSnapshot(source, id);
        } finally {
          await thaw(source, frozen);
        }
        log.info({ snapshot: id, volume: source, frozen: frozen.map((f) => f.node) }, 'snapshot created');
        return { snapshot: csiSnapshot(snap) };
      });
    },
  );

  const DeleteSnapshot = rpc(deps, 'DeleteSnapshot', async (req: { snapshot_id: string }) => {
    const id = requireString(req.snapshot_id, 'snapshot_id');
    if (!isUuid(id)) return {}; // no snapshot can have that id: already gone
    return guard.run([snapshotKey(id)], async () => {
      await orNotFound(rest.deleteSnapshot(id));
      return {};
    });
  });

  const ListSnapshots = rpc(
    deps,
    'ListSnapshots',
    async (req: {
      max_entries: number;
      starting_token: string;
      source_volume_id: string;
      snapshot_id: string;
    }) => {
      const max = parseMaxEntries(req.max_entries);
      const start = parseToken(req.starting_token);
      const entries = (list: VolumeSnapshot[]) => list.map((s) => ({ snapshot: csiSnapshot(s) }));
      if (req.snapshot_id) {
        const s = isUuid(req.snapshot_id) ? await orNotFound(rest.getSnapshot(req.snapshot_id)) : undefined;
        const match =
          s && (!req.source_volume_id || s.definition.spec.source_volume === req.source_volume_id);
        return { entries: match ? entries([s]) : [], next_token: '' };
      }
      if (req.source_volume_id && !isUuid(req.source_volume_id)) return { entries: [], next_token: '' };
      const page = await rest.listSnapshotsPage({
        volumeId: req.source_volume_id || undefined,
        maxEntries: max,
        startingToken: start,
      });
      checkPage(start, page.entries);
      return {
        entries: entries(page.entries),
        next_token: page.next_token === undefined ? '' : String(page.next_token),
      };
    },
  );

  return { CreateSnapshot, DeleteSnapshot, ListSnapshots };
}
