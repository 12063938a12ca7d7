import { hasRecord } from '../catalog/cluster.js';
import { DecodeError, isStorctlError } from '../errors.js';
import { IoEngineClient, IoEngineError } from '../io-engine/client.js';
import { isSameProcessAlive } from '../mount/processes.js';
import type { RestClient } from '../rest/client.js';
import { RestError } from '../rest/errors.js';
import { decodeRecord, isSwitchOverDone, type SpecType, type SpecTypes } from '../specs/index.js';
import { type KeySpace, objectKey } from '../store/keys.js';
import type { Store } from '../store/types.js';
import { csiNodeOrphanReason } from './csi-node.js';
import { cleanCsiNodeEntry, unstageThroughCsiNode } from './csi-node-cleanup.js';
import { engineSnapshotOrphanReason } from './engines.js';
import type { Findings } from './find.js';
import { readClaims } from './find.js';
import type { KubeAccess } from './kube/config.js';
import type { DeleteOutcome, Orphan, OrphanKind } from './types.js';
import { isClaimed } from './volumes-without-claims.js';

export interface DeleteDeps {
  store: Store;
  space: KeySpace;
  /** Core's REST API: replicas, nexuses and volumes are deleted through it. */
  rest: () => RestClient;
  kube: KubeAccess | null;
  csiNodeRoots: string[];
  engineTimeoutMs: number;
}

/** Kinds in the order they are removed: users before what they use (a nexus before its replicas). */
const deleteOrder: OrphanKind[] = [
  'csi-node-volume',
  'switchover',
  'volume-without-claim',
  'nexus',
  'engine-nexus',
  'replica',
  'engine-snapshot',
  'engine-replica',
  'nexus-info',
];

/**
 * Remove the orphans found, each checked again right before: through core for replicas, nexuses and
 * volumes (core refuses what became owned meanwhile); from the store directly for NexusInfo and
 * SwitchOver keys (core does not serve them), in a transaction guarded on the key's mod revision and
 * on its owner still being absent; on the io-engine for replicas and nexuses without a spec and
 * replica snapshots no volume snapshot records, once the store shows that again.
 */
export async function deleteOrphans(findings: Findings, deps: DeleteDeps): Promise<DeleteOutcome[]> {
  const outcomes: DeleteOutcome[] = [];
  const ordered = [...findings.orphans].sort(
    (a, b) => deleteOrder.indexOf(a.kind) - deleteOrder.indexOf(b.kind),
  );
  let claimsRechecked: Awaited<ReturnType<typeof readClaims>> | null = null;
  for (const orphan of ordered) {
    const stored = (type: string) => async () =>
      (await deps.store.get(objectKey(deps.space, type, orphan.id))) !== null;
    const done = (result: DeleteOutcome['result'], detail: string) =>
      outcomes.push({ orphan, result, detail });
    try {
      switch (orphan.kind) {
        case 'replica':
          await viaCore(
            () => deps.rest().deleteReplica(orphan.pool!, orphan.id),
            done,
            stored('ReplicaSpec'),
          );
          break;
        case 'nexus':
          await viaCore(() => deps.rest().deleteNexus(orphan.id), done, stored('NexusSpec'));
          break;
        case 'volume-without-claim': {
          if (!deps.kube) throw new Error('no Kubernetes API configured');
          claimsRechecked ??= await readClaims(deps.kube);
          if (isClaimed(claimsRechecked, orphan.id)) done('skipped', 'a PV or PVC refers to it now');
          // Published, it is in use after all: core refuses (409) and it is skipped.
          else
            await viaCore(
              () => deps.rest().deleteVolume(orphan.id, { ifUnpublished: true }),
              done,
              stored('VolumeSpec'),
            );
          break;
        }
        case 'engine-replica':
        case 'engine-nexus':
        case 'engine-snapshot':
          await onEngine(orphan, findings, deps, done);
          break;
        case 'nexus-info':
        case 'switchover':
          await deleteKey(orphan, findings, deps, done);
          break;
        case 'csi-node-volume': {
          const entry = findings.csiNode?.volumes.find((v) => v.volumeId === orphan.id);
          if (!entry || !findings.csiNode) {
            done('skipped', 'no longer in the csi-node state file');
            break;
          }
          // Still a leftover as the store is now: a volume created since with this id, published
          // again, or being moved by a switchover may be staged there and in use.
          if (!(await stillCsiNodeOrphan(orphan, findings.csiNode.file, deps))) {
            done('skipped', 'its volume is published here again, exists again or is being moved: left alone');
            break;
          }
          const owner = findings.csiNode.owner;
          const r =
            owner && (await isSameProcessAlive(owner.pid, owner.startTime))
              ? await unstageThroughCsiNode(entry, owner.endpoint)
              : await cleanCsiNodeEntry(entry, findings.csiNode.stateDir, deps.csiNodeRoots);
          if (r.left.length)
            done(
              r.done.length ? 'failed' : 'skipped',
              [...r.done, ...r.left.map((l) => `left: ${l}`)].join('; '),
            );
          else done('deleted', r.done.join('; ') || 'nothing was left to undo');
          break;
        }
      }
    } catch (err) {
      outcomes.push({
        orphan,
        result: 'failed',
        detail: (err as Error).message,
        exitCode: isStorctlError(err) ? err.exitCode : 1,
      });
    }
  }
  return outcomes;
}

type Done = (result: DeleteOutcome['result'], detail: string) => void;

async function viaCore(
  call: () => Promise<unknown>,
  done: Done,
  stored: () => Promise<boolean>,
): Promise<void> {
  try {
    await call();
    done('deleted', 'deleted through core');
  } catch (err) {
    if (err instanceof RestError && err.status === 404)
      done(
        'skipped',
        (await stored())
          ? 'core does not know it, though the store has it (written behind a running core?): left alone; restart core and run again'
          : 'already gone',
      );
    else if (err instanceof RestError && err.status === 409) done('skipped', `core refused: ${err.message}`);
    else throw err;
  }
}

async function onEngine(orphan: Orphan, findings: Findings, deps: DeleteDeps, done: Done): Promise<void> {
  const engine = findings.engines.find((e) => e.node === orphan.node);
  if (!engine) throw new Error(`io-engine ${orphan.node} is no longer listed`);
  const owned = await ownedNow(orphan, engine, deps);
  if (owned) {
    done('skipped', owned);
    return;
  }
  const client = new IoEngineClient(engine.endpoint, { deadlineMs: deps.engineTimeoutMs });
  try {
    if (orphan.kind === 'engine-replica') await client.destroyReplica(orphan.id);
    else if (orphan.kind === 'engine-nexus') await client.destroyNexus(orphan.id);
    else await client.destroyReplicaSnapshot(orphan.id);
    done('deleted', `destroyed on io-engine ${engine.node}`);
  } catch (err) {
    if (err instanceof IoEngineError && err.codeName === 'NOT_FOUND') done('skipped', 'already gone');
    else throw err;
  } finally {
    client.close();
  }
}

/** What the store shows now that owns what an io-engine holds (so it is left alone), or null. */
async function ownedNow(orphan: Orphan, engine: Findings['engines'][number], deps: DeleteDeps) {
  if (orphan.kind === 'engine-snapshot') {
    const held = engine.snapshots.find((s) => s.uuid === orphan.id);
    if (!held) return 'no longer listed by its io-engine';
    const parent = held.name.split('/')[0];
    const owner = await storedNow(deps, 'VolumeSnapshot', parent);
    return engineSnapshotOrphanReason(held, engine.node, () => owner)
      ? null
      : `snapshot ${parent} records it now, or an attempt of it is in progress`;
  }
  const type = orphan.kind === 'engine-replica' ? 'ReplicaSpec' : 'NexusSpec';
  return (await deps.store.get(objectKey(deps.space, type, orphan.id))) ? `a ${type} exists now` : null;
}

async function deleteKey(orphan: Orphan, findings: Findings, deps: DeleteDeps, done: Done): Promise<void> {
  const key = orphan.key!;
  // Checked again right before: the owner whose absence made it an orphan must still be absent
  // (create revision 0: no key), and the record must not have changed in a way that matters.
  let owner: string | null = null;
  if (orphan.kind === 'nexus-info')
    owner = orphan.volume
      ? objectKey(deps.space, 'VolumeSpec', orphan.volume)
      : objectKey(deps.space, 'NexusSpec', orphan.id);
  else if (!hasRecord(findings.snapshot.cluster, 'VolumeSpec', orphan.id))
    owner = objectKey(deps.space, 'VolumeSpec', orphan.id);
  const kv = await deps.store.get(key);
  if (!kv) {
    done('skipped', 'already gone');
    return;
  }
  // A NexusInfo's content does not decide whether it is an orphan (an io-engine shutting its nexus
  // down rewrites it): the revision read now is the guard. A SwitchOver that changed since it was
  // listed is being worked on (ha-cluster): left alone.
  if (orphan.kind === 'switchover' && kv.modRevision !== orphan.modRevision) {
    done('skipped', 'changed since it was listed (a switchover in progress?): left alone');
    return;
  }
  const res = await deps.store.txn({
    compare: [
      { key, target: 'mod', op: '==', value: kv.modRevision },
      ...(owner ? [{ key: owner, target: 'create' as const, op: '==' as const, value: 0 }] : []),
    ],
    success: [{ type: 'delete', key }],
  });
  if (res.succeeded) done('deleted', `deleted ${key} from the store`);
  else done('skipped', 'changed meanwhile, or its owner exists again: left alone');
}

/** csiNodeOrphanReason of the volume as the store holds it now. */
async function stillCsiNodeOrphan(orphan: Orphan, stateFile: string, deps: DeleteDeps): Promise<boolean> {
  const spec = await storedNow(deps, 'VolumeSpec', orphan.id);
  const so = await storedNow(deps, 'SwitchOver', orphan.id);
  // An unreadable record of a switchover: it may be running.
  const moving = so === 'undecodable' || (so !== undefined && !isSwitchOverDone(so));
  return csiNodeOrphanReason(stateFile, orphan.id, spec, moving, orphan.node ?? undefined) !== null;
}

/** The record of `type`/`id` as the store holds it now: 'undecodable' when it does not decode. */
async function storedNow<T extends SpecType>(
  deps: DeleteDeps,
  type: T,
  id: string,
): Promise<SpecTypes[T] | 'undecodable' | undefined> {
  const kv = await deps.store.get(objectKey(deps.space, type, id));
  if (!kv) return undefined;
  try {
    const rec = decodeRecord(kv.key, kv.value);
    return rec?.type === type ? (rec.value as SpecTypes[T]) : 'undecodable';
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    return 'undecodable';
  }
}
