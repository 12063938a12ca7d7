import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnoseStore } from '../../../src/lib/doctor/store.js';
import type { Replica } from '../../../src/lib/io-engine/types.js';
import { deleteOrphans } from '../../../src/lib/orphans/delete.js';
import { findEngineOrphans } from '../../../src/lib/orphans/engines.js';
import { findOrphans } from '../../../src/lib/orphans/find.js';
import { findNexusInfoOrphans } from '../../../src/lib/orphans/nexus-info.js';
import { findReplicaOrphans } from '../../../src/lib/orphans/replicas.js';
import { readSnapshot } from '../../../src/lib/orphans/snapshot.js';
import { findSwitchOverOrphans } from '../../../src/lib/orphans/switchovers.js';
import { nexusInfo, replicaSpec, switchOver, volumeSpec } from '../../../src/lib/specs/index.js';
import { nexusInfoKey, objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { createdVolumeSpec, managedReplicaSpec } from '../../helpers/specs.js';

const space = { clusterId: 'undecodable-owner', namespace: 'default' };
const VOLUME = '11111111-1111-4111-8111-111111111111';
const REPLICA = '22222222-2222-4222-8222-222222222222';
const NEXUS = '33333333-3333-4333-8333-333333333333';
const HELD = '44444444-4444-4444-8444-444444444444';
const WHOLE = '66666666-6666-4666-8666-666666666666';

/**
 * A record that does not decode is unreadable, not missing. Here the VolumeSpec of a volume does
 * not decode (a hand edit, a newer writer): its replica, NexusInfo and switchover are still its,
 * and a ReplicaSpec that does not decode still stands for the replica an io-engine holds. Listing
 * any of them as an orphan would invite deleting a live volume's data.
 */
describe('orphans and doctor store with undecodable records', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-undecodable-'));
  let store: Store;
  beforeAll(async () => {
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    await store.put(objectKey(space, 'VolumeSpec', VOLUME), JSON.stringify({ uuid: VOLUME, size: 'big' }));
    await store.put(
      objectKey(space, 'ReplicaSpec', REPLICA),
      replicaSpec.encode(managedReplicaSpec(REPLICA, 'pool-1', VOLUME)),
    );
    await store.put(
      nexusInfoKey(space, NEXUS, VOLUME),
      nexusInfo.encode({ children: [{ healthy: true, uuid: REPLICA }], clean_shutdown: false }),
    );
    await store.put(objectKey(space, 'SwitchOver', VOLUME), switchOverAt(VOLUME, 'ReplacePath'));
    await store.put(objectKey(space, 'ReplicaSpec', HELD), '{"uuid":"not a replica spec"}');
    // A volume whose one replica spec is (for all the doctor can tell) the undecodable one.
    await store.put(objectKey(space, 'VolumeSpec', WHOLE), JSON.stringify(createdVolumeSpec(WHOLE)));
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `orphans --delete` of the csi-node leftovers found (core is never asked for those). */
  const deleteCsiNodeOrphans = (found: Awaited<ReturnType<typeof findOrphans>>) =>
    deleteOrphans(
      { ...found, orphans: found.orphans.filter((o) => o.kind === 'csi-node-volume') },
      {
        store,
        space,
        rest: () => {
          throw new Error('core is not asked');
        },
        kube: null,
        csiNodeRoots: [dir],
        engineTimeoutMs: 1000,
      },
    );

  it('lists nothing they own or stand for as an orphan, and says they do not decode', async () => {
    const snap = await readSnapshot(store, space);
    expect(snap.cluster.errors.map((e) => e.key).sort()).toEqual(
      [objectKey(space, 'ReplicaSpec', HELD), objectKey(space, 'VolumeSpec', VOLUME)].sort(),
    );
    expect(findReplicaOrphans(snap)).toEqual([]);
    expect(findNexusInfoOrphans(snap)).toEqual([]);
    expect(findSwitchOverOrphans(snap, 0)).toEqual([]);
    const held = { uuid: HELD, pool: 'pool-1' } as Replica;
    const engines = [
      { node: 'node-1', endpoint: '127.0.0.1:1', replicas: [held], nexuses: [], snapshots: [] },
    ];
    expect(findEngineOrphans(engines, snap)).toEqual([]);

    // (The replica's pool has no PoolSpec here: that finding is true, and beside the point.)
    const report = await diagnoseStore(store, space, { switchoverGraceMs: 0 });
    expect(report.findings.map((f) => [f.check, f.subject])).toEqual([
      ['undecodable', objectKey(space, 'ReplicaSpec', HELD)],
      ['undecodable', objectKey(space, 'VolumeSpec', VOLUME)],
      ['missing-pool', `ReplicaSpec/${REPLICA}`],
      ['volume-without-replicas', `VolumeSpec/${WHOLE}`],
    ]);
    // Its replica may be the one that does not decode: the fix is to correct that, not to delete.
    const whole = report.findings.find((f) => f.subject === `VolumeSpec/${WHOLE}`)!;
    expect(whole.problem).toContain('1 ReplicaSpec(s) in the store do not decode, and may be its');
    expect(whole.fix).toBe(
      'correct the undecodable ReplicaSpecs first (their findings above): they may be its replicas',
    );
  });

  /** A csi-node state directory `name` under the test's dir whose state file holds `volumeId` staged. */
  function stagedIn(name: string, volumeId: string) {
    const stateDir = join(dir, name);
    mkdirSync(stateDir);
    const stateFile = join(stateDir, 'state.json');
    writeFileSync(
      stateFile,
      JSON.stringify({ version: 1, volumes: { [volumeId]: { volumeId, publishes: {} } } }),
      { mode: 0o600 },
    );
    const find = () =>
      findOrphans({
        store,
        space,
        engineTimeoutMs: 1000,
        switchoverGraceMs: 3_600_000,
        csiNodeStateDir: stateDir,
        kube: null,
      });
    return { stateFile, find };
  }

  it('leaves a csi-node volume alone when its volume came to exist after it was listed', async () => {
    const staged = '55555555-5555-4555-8555-555555555555';
    const { stateFile, find } = stagedIn('csi-node', staged);
    const found = await find();
    expect(found.orphans.filter((o) => o.kind === 'csi-node-volume').map((o) => o.id)).toEqual([staged]);
    // Meanwhile a volume with that id is created (and may be staged there, in use).
    await store.put(objectKey(space, 'VolumeSpec', staged), JSON.stringify({ uuid: staged }));

    const outcomes = await deleteCsiNodeOrphans(found);
    expect(outcomes.map((o) => [o.result, o.detail])).toEqual([
      ['skipped', 'its volume is published here again, exists again or is being moved: left alone'],
    ]);
    expect(Object.keys(JSON.parse(readFileSync(stateFile, 'utf8')).volumes)).toEqual([staged]);
  });

  it('leaves a staged volume alone while a switchover moves it (its target is inactive meanwhile)', async () => {
    const moving = '77777777-7777-4777-8777-777777777777';
    const { stateFile, find } = stagedIn('csi-node-moving', moving);
    await store.put(objectKey(space, 'VolumeSpec', moving), volumeSpec.encode(createdVolumeSpec(moving)));
    // Unpublished and no switchover: a leftover.
    const found = await find();
    expect(found.orphans.filter((o) => o.kind === 'csi-node-volume').map((o) => o.reason)).toEqual([
      `csi-node (${stateFile}) still has volume ${moving}, which is not published`,
    ]);
    // Meanwhile ha-cluster starts moving its target: deleting now would unmount a volume in use.
    await store.put(objectKey(space, 'SwitchOver', moving), switchOverAt(moving, 'RepublishVolume'));
    const outcomes = await deleteCsiNodeOrphans(found);
    expect(outcomes.map((o) => o.result)).toEqual(['skipped']);
    expect(Object.keys(JSON.parse(readFileSync(stateFile, 'utf8')).volumes)).toEqual([moving]);
    // Nor is it listed while the switchover runs.
    expect((await find()).orphans.filter((o) => o.kind === 'csi-node-volume')).toEqual([]);
  });
});

/** A SwitchOver record of `volume` at `stage`, as ha-cluster stores one. */
function switchOverAt(volume: string, stage: 'ReplacePath' | 'RepublishVolume'): string {
  return switchOver.encode({
    callback_uri: '',
    node_name: 'node-1',
    volume,
    operation: { operation: stage, result: null },
    timestamp: new Date().toISOString(),
    existing_nqn: '',
    new_path: null,
    retry_count: 0,
    reuse_existing: false,
    publish_context: null,
  });
}
