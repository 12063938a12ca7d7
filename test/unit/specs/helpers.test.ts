import { describe, expect, it } from 'vitest';
import {
  activeTarget,
  childReplicaId,
  childUri,
  cordonLabels,
  cordonStateName,
  createdState,
  currentReplicaSnapshots,
  desiredNumReplicas,
  drainLabels,
  drainStateName,
  drainStateText,
  frontendNodes,
  healthInfoNexusId,
  healthyChildren,
  isChildHealthy,
  isCordoned,
  isCreated,
  isSwitchOverDone,
  localChildUri,
  type NodeSpec,
  nexusInfo,
  nexusReplicaIds,
  nexusSpec,
  nodeMatches,
  nodeSpec,
  nodeStatusText,
  nvmfChildUri,
  operationName,
  poolDisks,
  poolMatches,
  poolRefUuid,
  poolSpec,
  replicaKind,
  replicaPoolName,
  replicaSpec,
  snapshotOperationName,
  specStatusName,
  switchOver,
  switchOverError,
  switchOverStageName,
  volumeContentSource,
  volumeNexusId,
  volumeSnapshot,
  volumeSpec,
  volumeTargetNode,
  volumeTargetProtocol,
  withoutReplicaSnapshots,
} from '../../../src/lib/specs/index.js';
import {
  fixtures,
  ids,
  nexusInfoReference,
  nexusReference,
  poolReference,
  replicaReference,
  switchOverReference,
  volumeReference,
  volumeSnapshotReference,
} from './fixtures.js';

const fx = (prefix: string) => fixtures.find((f) => f.name.startsWith(prefix))!.json;

describe('SpecStatus helpers', () => {
  it.each([
    ['Creating', 'Creating', null, false],
    ['Deleting', 'Deleting', null, false],
    ['Deleted', 'Deleted', null, false],
    [{ Created: 'Online' }, 'Created', 'Online', true],
    [{ Created: 'online' }, 'Created', 'online', true],
  ] as const)('%j → %s', (status, name, state, created) => {
    expect(specStatusName(status)).toBe(name);
    expect(createdState(status)).toBe(state);
    expect(isCreated(status)).toBe(created);
  });
});

describe('volume accessors', () => {
  const v = volumeSpec.decode('k', volumeReference);
  it('reads the active target', () => {
    expect(volumeTargetNode(v)).toBe('node-2');
    expect(volumeTargetProtocol(v)).toBe('nvmf');
    expect(volumeNexusId(v)).toBe(ids.nexus);
    expect(healthInfoNexusId(v)).toBe(ids.nexus);
    expect(frontendNodes(v)).toEqual(['node-2']);
    expect(activeTarget(v)?.config.reservationKey).toBe(10075049441338057178n);
  });
  it('an unpublished (inactive) target is no target, but its nexus still names the health info', () => {
    const u = { ...v, target: { ...v.target!, active: false } };
    expect(volumeTargetNode(u)).toBeNull();
    expect(volumeNexusId(u)).toBeNull();
    expect(healthInfoNexusId(u)).toBe(ids.nexus);
    expect(healthInfoNexusId({ ...u, last_nexus_id: ids.nexus2 })).toBe(ids.nexus2);
  });
  it('operation names and desired replicas', () => {
    const other = volumeSpec.decode('k', fx('VolumeSpec with restore'));
    expect(operationName(other.operation!.operation)).toBe('Publish');
    expect(operationName({ SetReplica: 3 })).toBe('SetReplica');
    expect(operationName('Unpublish')).toBe('Unpublish');
    expect(desiredNumReplicas({ ...v, operation: { operation: { SetReplica: 3 }, result: null } })).toBe(3);
    expect(desiredNumReplicas(v)).toBe(2);
    expect(volumeContentSource(other)).toEqual([ids.snapshot, ids.volume]);
    expect(volumeContentSource(v)).toBeNull();
  });
});

describe('node cordon helpers', () => {
  const plain = nodeSpec.decode('k', fx('NodeSpec (minimal'));
  const draining = nodeSpec.decode('k', fx('NodeSpec draining'));
  const states: [string, NodeSpec, boolean, string | null, string, string, string[], string[]][] = [
    ['schedulable', plain, false, null, 'Not draining', 'Online', [], []],
    [
      'draining',
      draining,
      true,
      'Draining',
      'Draining',
      'Online, Cordoned, Draining',
      ['maint'],
      ['upgrade'],
    ],
    [
      'cordoned',
      { ...plain, cordon_drain_state: { Cordoned: { cordonlabels: ['a', 'b'] } } },
      true,
      'Cordoned',
      'Not draining',
      'Online, Cordoned',
      ['a', 'b'],
      [],
    ],
    [
      'drained',
      { ...plain, cordon_drain_state: { Drained: { cordonlabels: [], drainlabels: ['d'] } } },
      true,
      'Drained',
      'Drained',
      'Online, Cordoned, Drained',
      [],
      ['d'],
    ],
  ];
  it.each(states)('%s', (_n, node, cordoned, stateName, drainText, status, cl, dl) => {
    expect(isCordoned(node)).toBe(cordoned);
    expect(cordonStateName(node)).toBe(stateName);
    expect(drainStateName(node)).toBe(stateName === 'Cordoned' ? null : stateName);
    expect(drainStateText(node)).toBe(drainText);
    expect(nodeStatusText(node, 'Online')).toBe(status);
    expect(cordonLabels(node)).toEqual(cl);
    expect(drainLabels(node)).toEqual(dl);
  });
  it('label selectors', () => {
    expect(nodeMatches(draining, { zone: 'a' })).toBe(true);
    expect(nodeMatches(draining, { zone: 'b' })).toBe(false);
    expect(nodeMatches(plain, {})).toBe(true);
  });
});

describe('pool, replica, nexus, snapshot, switchover and NexusInfo helpers', () => {
  it('pools', () => {
    const p = poolSpec.decode('k', poolReference);
    expect(poolDisks(p)).toEqual(['/dev/sdb']);
    expect(poolMatches(p, { 'openebs.io/created-by': 'operator-diskpool' })).toBe(true);
    expect(poolMatches({ ...p, labels: null }, { a: 'b' })).toBe(false);
  });
  it('replicas', () => {
    const r = replicaSpec.decode('k', replicaReference);
    expect(replicaPoolName(r)).toBe('pool-1');
    expect(poolRefUuid(r.pool)).toBeNull();
    expect(replicaKind(r)).toBe('regular');
    const r2 = replicaSpec.decode('k', fx('ReplicaSpec with'));
    expect(replicaPoolName(r2)).toBe('pool-1');
    expect(poolRefUuid(r2.pool)).toBe(ids.poolUuid);
    expect(replicaKind(r2)).toBe('snapshotClone');
  });
  it('nexuses', () => {
    const n = nexusSpec.decode('k', nexusReference);
    expect(nexusReplicaIds(n)).toEqual([ids.child1, ids.child2]);
    expect(childUri(n.children[0])).toBe(localChildUri(ids.child1));
    expect(childUri(n.children[1])).toBe(nvmfChildUri('10.0.0.7', ids.child2));
    expect(childReplicaId({ Uri: 'aio:///dev/sdc' })).toBeNull();
  });
  it('snapshots', () => {
    const s = volumeSnapshot.decode('k', volumeSnapshotReference);
    expect(currentReplicaSnapshots(s).map((r) => r.spec.uuid)).toEqual([ids.replicaSnapshot]);
    expect(snapshotOperationName(s)).toBeNull();
    expect(snapshotOperationName(volumeSnapshot.decode('k', fx('VolumeSnapshot being')))).toBe('Create');
  });
  it('a snapshot record without some of its replica snapshots', () => {
    const s = volumeSnapshot.decode('k', volumeSnapshotReference);
    const current = s.metadata.txn_id;
    const [taken] = currentReplicaSnapshots(s);
    const earlier = { ...taken, spec: { ...taken.spec, uuid: ids.child2 } };
    s.metadata.transactions = { earlier: [earlier], [current]: [taken] };
    // An earlier attempt left empty goes; the current one stays, even empty.
    expect(withoutReplicaSnapshots(s, () => true).metadata.transactions).toEqual({ [current]: [] });
    expect(withoutReplicaSnapshots(s, (r) => r.spec.uuid === ids.child2).metadata.transactions).toEqual({
      [current]: [taken],
    });
    expect(withoutReplicaSnapshots(s, () => false).metadata.transactions).toEqual(s.metadata.transactions);
    expect(s.metadata.transactions.earlier).toEqual([earlier]); // a copy: the record itself is unchanged
  });
  it('switchovers', () => {
    const s = switchOver.decode('k', switchOverReference);
    expect(switchOverStageName(s)).toBe('ReplacePath');
    expect(isSwitchOverDone(s)).toBe(false);
    const e = switchOver.decode('k', fx('SwitchOver errored'));
    expect(switchOverError(e)).toBe('no healthy replicas');
    expect(isSwitchOverDone(e)).toBe(true);
  });
  it('NexusInfo', () => {
    const i = nexusInfo.decode('k', nexusInfoReference);
    expect(healthyChildren(i)).toEqual([ids.child1, ids.child2]);
    const j = { ...i, children: [{ ...i.children[0], healthy: false }] };
    expect(isChildHealthy(j, ids.child1)).toBe(false);
    expect(isChildHealthy(i, ids.child2)).toBe(true);
    expect(nexusInfo.encode(j)).toBe(
      `{"children":[{"healthy":false,"uuid":"${ids.child1}"}],"clean_shutdown":false}`,
    );
  });
});
