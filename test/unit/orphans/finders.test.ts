import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClusterState } from '../../../src/lib/catalog/cluster.js';
import { findCsiNodeOrphans } from '../../../src/lib/orphans/csi-node.js';
import { isBelow } from '../../../src/lib/orphans/csi-node-cleanup.js';
import { dropCsiNodeEntry, readCsiNodeState } from '../../../src/lib/orphans/csi-node-state.js';
import { findNexusOrphans } from '../../../src/lib/orphans/nexuses.js';
import { findReplicaOrphans } from '../../../src/lib/orphans/replicas.js';
import type { StoreSnapshot } from '../../../src/lib/orphans/snapshot.js';
import { findSwitchOverOrphans } from '../../../src/lib/orphans/switchovers.js';
import { findVolumesWithoutClaims, indexClaims } from '../../../src/lib/orphans/volumes-without-claims.js';
import type {
  NexusSpec,
  ReplicaSpec,
  SwitchOverSpec,
  SwitchOverStage,
  VolumeSpec,
} from '../../../src/lib/specs/index.js';

const dir = mkdtempSync(join(tmpdir(), 'storctl-orphans-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const VOL = '11111111-1111-4111-8111-111111111111';
const GONE = '22222222-2222-4222-8222-222222222222';

function snapshot(volumes: string[], switchovers: SwitchOverSpec[] = []): StoreSnapshot {
  const cluster: ClusterState = {
    specs: {
      VolumeSpec: new Map(
        volumes.map((uuid) => [
          uuid,
          { uuid, status: { Created: 'Online' }, operation: null, target: null } as unknown as VolumeSpec,
        ]),
      ),
    },
    nexusInfo: new Map(),
    liveness: new Map(),
    errors: [],
  };
  return {
    nexusInfo: [],
    switchovers: switchovers.map((value, i) => ({ key: `k/${i}`, modRevision: i + 1, value })),
    cluster,
  };
}

const sw = (volume: string, stage: SwitchOverStage, at: number): SwitchOverSpec => ({
  callback_uri: '',
  node_name: 'n',
  volume,
  operation: { operation: stage, result: null },
  timestamp: new Date(at).toISOString(),
  existing_nqn: '',
  new_path: null,
  retry_count: 0,
  reuse_existing: false,
  publish_context: null,
});

describe('replica finder', () => {
  it('a replica whose destroy did not finish says core retries it; an owned one is none', () => {
    const snap = snapshot([VOL]);
    const replica = (uuid: string, owner: string | undefined, status: ReplicaSpec['status']) =>
      [
        uuid,
        { uuid, managed: true, owners: { volume: owner }, status, pool: 'p1' } as unknown as ReplicaSpec,
      ] as const;
    snap.cluster.specs.ReplicaSpec = new Map([
      replica('r-owned', VOL, { Created: 'online' }),
      replica('r-gone', GONE, { Created: 'online' }),
      replica('r-deleting', undefined, 'Deleting'),
    ]);
    expect(findReplicaOrphans(snap).map((o) => [o.id, o.reason])).toEqual([
      ['r-deleting', 'managed replica with no owning volume, being deleted (core retries the destroy)'],
      ['r-gone', `managed replica owned by volume ${GONE}, which does not exist`],
    ]);
  });
});

describe('nexus finder', () => {
  it("a nexus being deleted says core destroys it; an owned one, or an operator's, is none", () => {
    const snap = snapshot([VOL]);
    const nexus = (uuid: string, owner: string | undefined, managed: boolean, spec_status: string) =>
      [uuid, { uuid, owner, managed, spec_status, node: 'node-1' } as unknown as NexusSpec] as const;
    snap.cluster.specs.NexusSpec = new Map([
      nexus('n-owned', VOL, true, 'Created'),
      nexus('n-operator', undefined, false, 'Created'),
      nexus('n-gone', GONE, true, 'Created'),
      nexus('n-deleting', undefined, true, 'Deleting'),
    ]);
    expect(findNexusOrphans(snap).map((o) => [o.id, o.reason])).toEqual([
      ['n-deleting', "managed nexus with no owning volume, being deleted (core's nexus GC destroys it)"],
      ['n-gone', `nexus owned by volume ${GONE}, which does not exist`],
    ]);
  });
});

describe('switchover finder', () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  it('a deleted volume makes any switchover stale; a finished one only past the grace; one in progress never', () => {
    const found = findSwitchOverOrphans(
      snapshot(
        [VOL],
        [sw(GONE, 'ReplacePath', now), { ...sw(VOL, 'Successful', now - 60_000), volume: VOL }],
      ),
      10 * 60_000,
      now,
    );
    expect(found.map((o) => o.id)).toEqual([GONE]);
    const later = findSwitchOverOrphans(
      snapshot([VOL], [sw(VOL, 'Successful', now - 11 * 60_000)]),
      10 * 60_000,
      now,
    );
    expect(later[0].reason).toBe('switchover Successful 11m ago, past the 10m grace');
    expect(findSwitchOverOrphans(snapshot([VOL], [sw(VOL, 'ReplacePath', 0)]), 1, now)).toEqual([]);
  });
});

describe('volumes without claims', () => {
  it('a PV handle, a PV named pvc-<id> or a PVC uid claims the volume', () => {
    const a = '33333333-3333-4333-8333-333333333333';
    const b = '44444444-4444-4444-8444-444444444444';
    const c = '55555555-5555-4555-8555-555555555555';
    const index = indexClaims(
      [
        { metadata: { name: 'pv-x' }, spec: { csi: { volumeHandle: VOL } } },
        { metadata: { name: `pvc-${a}` } },
      ],
      [{ metadata: { name: 'claim', namespace: 'ns', uid: b } }],
      'fixture',
    );
    const found = findVolumesWithoutClaims(index, snapshot([VOL, a, b, c]));
    expect(found.map((o) => o.id)).toEqual([c]);
    expect(findVolumesWithoutClaims(null, snapshot([c]))).toEqual([]);
  });

  it('one that is published is in use all the same: said so, and --delete leaves it', () => {
    const snap = snapshot([VOL]);
    const v = snap.cluster.specs.VolumeSpec!.get(VOL)!;
    v.target = { node: 'node-2', active: true } as VolumeSpec['target'];
    const [found] = findVolumesWithoutClaims(indexClaims([], [], 'fixture'), snap);
    expect(found.node).toBe('node-2');
    expect(found.reason).toBe(
      'no PersistentVolume and no PersistentVolumeClaim in fixture refer to it, yet it is published on node node-2: in use',
    );
    expect(found.action).toMatch(/^none while it is published: --delete leaves it/);
  });
});

describe("csi-node's state file", () => {
  it('is absent → null; a wrong version is an error naming the file', async () => {
    expect(await readCsiNodeState(join(dir, 'none'))).toBeNull();
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ version: 2, volumes: {} }));
    await expect(readCsiNodeState(dir)).rejects.toThrow(/has version 2/);
  });

  it('drops an entry only while it is unchanged, keeping fields this reader does not know', async () => {
    const s = mkdtempSync(join(dir, 'st-'));
    const entry = (id: string, stagedAt: string) => ({ volumeId: id, stagedAt, extra: { kept: true } });
    writeFileSync(
      join(s, 'state.json'),
      JSON.stringify({ version: 1, volumes: { [VOL]: entry(VOL, 't1'), [GONE]: entry(GONE, 't1') } }),
    );
    const state = (await readCsiNodeState(s))!;
    const gone = state.volumes.find((v) => v.volumeId === GONE)!;
    expect(await dropCsiNodeEntry(s, { ...gone, stagedAt: 't0' })).toBe(false);
    expect(await dropCsiNodeEntry(s, gone)).toBe(true);
    const after = JSON.parse(readFileSync(join(s, 'state.json'), 'utf8'));
    expect(after).toEqual({ version: 1, volumes: { [VOL]: entry(VOL, 't1') } });
  });

  it('paths are touched only strictly below a root, `..` included', () => {
    expect(isBelow('/var/lib/kubelet/pods/x', '/var/lib/kubelet')).toBe(true);
    expect(isBelow('/var/lib/kubelet', '/var/lib/kubelet')).toBe(false);
    expect(isBelow('/var/lib/kubelet/../../etc', '/var/lib/kubelet')).toBe(false);
    expect(isBelow('/var/lib/kubelet-other/x', '/var/lib/kubelet')).toBe(false);
  });
});

describe('csi-node finder', () => {
  const ids = {
    gone: '66666666-6666-4666-8666-666666666666',
    unpublished: '77777777-7777-4777-8777-777777777777',
    inactive: '88888888-8888-4888-8888-888888888888',
    elsewhere: '99999999-9999-4999-8999-999999999999',
    here: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa',
    anyNode: 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb',
  };
  const target = (active: boolean, nodes: string[]) => ({
    node: 'io-1',
    nexus: 'n',
    protocol: 'nvmf',
    active,
    config: {},
    frontend: { host_acl: nodes.map((n) => ({ node_name: n, node_nqn: `nqn:${n}` })) },
  });
  const snap = snapshot([]);
  const vols = snap.cluster.specs.VolumeSpec!;
  const put = (uuid: string, t: unknown) => vols.set(uuid, { uuid, target: t } as unknown as VolumeSpec);
  put(ids.unpublished, null);
  put(ids.inactive, target(false, []));
  put(ids.elsewhere, target(true, ['node-b']));
  put(ids.here, target(true, ['node-a']));
  put(ids.anyNode, target(true, []));
  const state = {
    file: '/state/state.json',
    stateDir: '/state',
    volumes: Object.values(ids).map((volumeId) => ({ volumeId, stagingPath: `/k/${volumeId}` })),
  };

  it('a gone, unpublished or inactive volume is an orphan; with --node-id also one published elsewhere only', () => {
    const without = findCsiNodeOrphans(state, snap, undefined).map((o) => o.id);
    expect(without.sort()).toEqual([ids.gone, ids.unpublished, ids.inactive].sort());
    const withNode = findCsiNodeOrphans(state, snap, 'node-a');
    expect(withNode.map((o) => o.id).sort()).toEqual(
      [ids.gone, ids.unpublished, ids.inactive, ids.elsewhere].sort(),
    );
    expect(withNode.find((o) => o.id === ids.elsewhere)?.reason).toContain(
      'published to node-b, not to node-a',
    );
    expect(withNode.find((o) => o.id === ids.gone)?.paths).toEqual([`staged at /k/${ids.gone}`]);
    // A volume that still exists may still be a pod's: the way back is named beside the undo.
    expect(withNode.find((o) => o.id === ids.unpublished)?.action).toContain(
      `if a pod still uses it, publish the volume again instead (\`storctl volume publish ${ids.unpublished}\`)`,
    );
    expect(withNode.find((o) => o.id === ids.gone)?.action).not.toContain('publish');
  });
});
