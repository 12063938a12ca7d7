import { describe, expect, it } from 'vitest';
import { DecodeError } from '../../../src/lib/errors.js';
import { codecFor, stringifyJson } from '../../../src/lib/specs/index.js';
import { withValue } from './edit.js';
import { fixtures, ids } from './fixtures.js';

const fixture = (prefix: string) => {
  const f = fixtures.find((x) => x.name.startsWith(prefix));
  if (!f) throw new Error(`no fixture ${prefix}`);
  return f;
};

const created = (s: unknown) => ({ Created: s });
const nexusStates = ['Unknown', 'Online', 'Degraded', 'Faulted', 'Shutdown', 'ShuttingDown'];
const share = ['nvmf', ['nqn.2019-05.io.openebs:node-name:node-1']];
const child = { Replica: { uuid: ids.child1, share_uri: `bdev:///${ids.child1}?uuid=${ids.child1}` } };
const op = (o: unknown) => ({ operation: o, result: null });
const targetCfg = {
  node: 'node-1',
  nexus: ids.nexus,
  protocol: 'nvmf',
  active: true,
  config: {
    controllerIdRange: { start: 1, end: 2 },
    reservationKey: 7,
    reservationType: 'ExclusiveAccess',
    preemptPolicy: 'Holder',
  },
  frontend: { host_acl: [] },
};

interface EnumCase {
  name: string;
  fixture: string;
  path: (string | number)[];
  accepted: unknown[];
  rejected: unknown[];
}

const cases: EnumCase[] = [
  {
    name: 'VolumeSpec status (VolumeStatus, PascalCase)',
    fixture: 'VolumeSpec (real',
    path: ['status'],
    accepted: ['Creating', 'Deleting', 'Deleted', ...nexusStates.map(created)],
    rejected: [
      'creating',
      'Created',
      created('online'),
      created('Offline'),
      created(null),
      { Creating: 1 },
      {},
      42,
    ],
  },
  {
    name: 'ReplicaSpec status (ReplicaStatus, camelCase)',
    fixture: 'ReplicaSpec (test',
    path: ['status'],
    accepted: [
      'Creating',
      'Deleting',
      'Deleted',
      ...['unknown', 'online', 'degraded', 'faulted'].map(created),
    ],
    rejected: [created('Online'), created('shutdown'), 'deleting'],
  },
  {
    name: 'PoolSpec status (PoolStatus)',
    fixture: 'PoolSpec',
    path: ['status'],
    accepted: [
      'Creating',
      'Deleting',
      'Deleted',
      ...['Unknown', 'Online', 'Degraded', 'Faulted'].map(created),
    ],
    rejected: [created('Shutdown'), created('online')],
  },
  {
    name: 'NexusSpec spec_status (NexusStatus)',
    fixture: 'NexusSpec (test',
    path: ['spec_status'],
    accepted: ['Creating', 'Deleting', 'Deleted', ...nexusStates.map(created)],
    rejected: [created('shutdown'), created('Shutting')],
  },
  {
    name: 'VolumeSnapshot status (SpecStatus<()>)',
    fixture: 'VolumeSnapshot with',
    path: ['status'],
    accepted: ['Creating', 'Deleting', 'Deleted', created(null)],
    rejected: [created('Online'), created({})],
  },
  {
    name: 'replica share protocol (lowercase, storctl adds nbd)',
    fixture: 'ReplicaSpec (test',
    path: ['share'],
    accepted: ['none', 'nvmf', 'iscsi', 'nbd'],
    rejected: ['None', 'NVMF', 'Nvmf', 'nvme', null],
  },
  {
    name: 'nexus share protocol',
    fixture: 'NexusSpec (test',
    path: ['share'],
    accepted: ['none', 'nvmf', 'iscsi', 'nbd'],
    rejected: ['Nvmf'],
  },
  {
    name: 'volume target protocol',
    fixture: 'VolumeSpec (real',
    path: ['target', 'protocol'],
    accepted: ['nvmf', 'iscsi', 'nbd', null],
    rejected: ['none', 'NVMF'],
  },
  {
    name: 'reservationType',
    fixture: 'VolumeSpec (real',
    path: ['target', 'config', 'reservationType'],
    accepted: [
      'Reserved',
      'WriteExclusive',
      'ExclusiveAccess',
      'WriteExclusiveRegsOnly',
      'ExclusiveAccessRegsOnly',
      'WriteExclusiveAllRegs',
      'ExclusiveAccessAllRegs',
    ],
    rejected: ['exclusiveAccess', 'EXCLUSIVE_ACCESS'],
  },
  {
    name: 'preemptPolicy',
    fixture: 'VolumeSpec (real',
    path: ['target', 'config', 'preemptPolicy'],
    accepted: ['Holder', { ArgKey: null }, { ArgKey: 5 }, { ArgKey: 18446744073709551615n }],
    rejected: ['holder', 'ArgKey', { ArgKey: -1 }, { ArgKey: 18446744073709551616n }],
  },
  {
    name: 'replica kind (camelCase)',
    fixture: 'ReplicaSpec with',
    path: ['kind'],
    accepted: ['regular', 'snapshot', 'snapshotClone'],
    rejected: ['SnapshotClone', 'Regular'],
  },
  {
    name: 'PoolRef (untagged)',
    fixture: 'ReplicaSpec (test',
    path: ['pool'],
    accepted: ['pool-1', ['pool-1', ids.poolUuid]],
    rejected: [['pool-1'], ['pool-1', 'not-a-uuid'], 5, { Named: 'pool-1' }],
  },
  {
    name: 'NexusChild',
    fixture: 'NexusSpec (test',
    path: ['children', 0],
    accepted: [child, { Uri: 'aio:///dev/sdc' }],
    rejected: [{ replica: child.Replica }, { Uri: 5 }, 'bdev:///x'],
  },
  {
    name: 'VolumeOperation',
    fixture: 'VolumeSpec (real',
    path: ['operation'],
    accepted: [
      null,
      ...[
        'Create',
        'Destroy',
        { Share: 'nvmf' },
        'Unshare',
        { SetReplica: 3 },
        { Publish: ['node-1', ids.nexus, 'nvmf'] },
        { Publish: ['node-1', ids.nexus, null] },
        { Publish2: { config: targetCfg, publish_context: { ioTimeout: '30' } } },
        { Republish: { config: targetCfg } },
        'Unpublish',
        { RemoveUnusedReplica: ids.replica },
        { CreateSnapshot: ids.snapshot },
        { DestroySnapshot: ids.snapshot },
        { Resize: 10737418240 },
        { SetVolumeProperty: { MaxSnapshots: 10 } },
      ].map(op),
      { operation: 'Create', result: true },
      { operation: 'Create', result: false },
    ],
    rejected: [
      op('create'),
      op({ SetReplica: 256 }),
      op({ Share: 'Nvmf' }),
      { operation: 'Create', result: 1 },
    ],
  },
  {
    name: 'ReplicaOperation',
    fixture: 'ReplicaSpec (test',
    path: ['operation'],
    accepted: [
      'Create',
      'Destroy',
      { Share: share },
      'Unshare',
      { OwnerUpdate: { volume: null, disown_all: true } },
      { Resize: 1 },
    ].map(op),
    rejected: [op({ Share: 'nvmf' }), op('OwnerUpdate')],
  },
  {
    name: 'NexusOperation',
    fixture: 'NexusSpec (test',
    path: ['operation'],
    accepted: [
      'Create',
      'Destroy',
      'Shutdown',
      { Share: share },
      'Unshare',
      { AddChild: child },
      { RemoveChild: { Uri: 'nvmf://10.0.0.1:8420/nqn' } },
      { OwnerUpdate: 'None' },
      { OwnerUpdate: { Volume: ids.volume } },
      { OwnerUpdate: 'All' },
      { Resize: 2 },
    ].map(op),
    rejected: [op({ OwnerUpdate: 'Volume' }), op('shutdown')],
  },
  {
    name: 'PoolOperation',
    fixture: 'PoolSpec',
    path: ['operation'],
    accepted: [
      'Create',
      'Destroy',
      { Label: { labels: { a: 'b' }, overwrite: true } },
      { Unlabel: { label_key: 'a' } },
    ].map(op),
    rejected: [op({ Label: { labels: { a: 1 }, overwrite: true } }), op({ Unlabel: 'a' })],
  },
  {
    name: 'NodeOperation',
    fixture: 'NodeSpec draining',
    path: ['operation'],
    accepted: [
      { Cordon: 'l' },
      { Uncordon: 'l' },
      { Drain: 'l' },
      { AddDrainingVolumes: { volumes: [ids.volume] } },
      { RemoveDrainingVolumes: { volumes: [] } },
      { RemoveAllDrainingVolumes: [] },
      { SetDrained: [] },
      { Label: { labels: {}, overwrite: false } },
      { Unlabel: { label_key: 'k' } },
    ].map(op),
    rejected: [op('SetDrained'), op({ SetDrained: [1] }), op({ Cordon: ['l'] })],
  },
  {
    name: 'cordon_drain_state',
    fixture: 'NodeSpec draining',
    path: ['cordon_drain_state'],
    accepted: [
      { Cordoned: { cordonlabels: ['a'] } },
      { Draining: { cordonlabels: [], drainlabels: ['d'] } },
      { Drained: { cordonlabels: ['a'], drainlabels: ['d'] } },
    ],
    rejected: ['Cordoned', { cordoned: { cordonlabels: [] } }, { Draining: { cordonlabels: [] } }],
  },
  {
    name: 'VolumeSnapshotOperation',
    fixture: 'VolumeSnapshot with',
    path: ['metadata', 'operation'],
    accepted: [
      { Create: { txn_id: '3', replicas: [] } },
      'Destroy',
      'CleanupStaleTransactions',
      { CreateRestore: { volume_uuid: ids.volume } },
      { DestroyRestore: { volume_uuid: ids.volume } },
    ].map(op),
    rejected: [op({ Create: { txn_id: 3, replicas: [] } }), op('Cleanup')],
  },
  {
    name: 'SwitchOver stage',
    fixture: 'SwitchOver',
    path: ['operation', 'operation'],
    accepted: ['Init', 'RepublishVolume', 'ReplacePath', 'DeleteTarget', 'Successful', { Errored: 'boom' }],
    rejected: ['Errored', 'replacePath', { Errored: null }],
  },
  {
    name: 'CoreRegistryConfig registration',
    fixture: 'CoreRegistryConfig',
    path: ['registration'],
    accepted: ['Automatic', 'Manual'],
    rejected: ['automatic', 'Auto'],
  },
];

describe('every enum variant and casing', () => {
  for (const c of cases) {
    const f = fixture(c.fixture);
    const codec = codecFor(f.type)!;
    it.each(c.accepted.map((v) => ({ v: stringifyJson(v), json: withValue(f.json, c.path, v) })))(
      `${c.name}: accepts $v and writes it back unchanged`,
      ({ json }) => {
        expect(codec.encode(codec.decode(f.key, json))).toBe(json);
      },
    );
    it.each(c.rejected.map((v) => ({ v: stringifyJson(v), json: withValue(f.json, c.path, v) })))(
      `${c.name}: rejects $v naming the field`,
      ({ json }) => {
        let err: unknown;
        try {
          codec.decode(f.key, json);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(DecodeError);
        const d = err as DecodeError;
        expect(d.key).toBe(f.key);
        expect(d.field.startsWith(c.path.join('.').replace(/\.(\d+)/g, '[$1]'))).toBe(true);
        expect(d.message).toContain(`cannot decode ${f.key}: field '${d.field}'`);
      },
    );
  }
});
