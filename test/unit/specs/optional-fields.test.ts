import { describe, expect, it } from 'vitest';
import {
  type CoreRegistryConfig,
  coreRegistryConfig,
  defaultNvmfConfig,
  type NodeSpec,
  nodeSpec,
  type ReplicaSpec,
  replicaSpec,
  type VolumeSpec,
  volumeSpec,
} from '../../../src/lib/specs/index.js';
import { ids } from './fixtures.js';

const freshVolume = (): VolumeSpec => ({
  uuid: ids.volume,
  size: 1048576,
  labels: null,
  num_replicas: 1,
  status: 'Creating',
  policy: { self_heal: true },
  topology: null,
  last_nexus_id: null,
  operation: { operation: 'Create', result: null },
  thin: false,
  target: null,
  publish_context: null,
  affinity_group: null,
});

describe('omit-if-none fields', () => {
  it('a new VolumeSpec leaves out content_source, metadata and max_snapshots, and writes the rest in order', () => {
    expect(volumeSpec.encode(freshVolume())).toBe(
      `{"uuid":"${ids.volume}","size":1048576,"labels":null,"num_replicas":1,"status":"Creating","policy":{"self_heal":true},"topology":null,"last_nexus_id":null,"operation":{"operation":"Create","result":null},"thin":false,"target":null,"publish_context":null,"affinity_group":null}`,
    );
  });

  it('metadata at its default (snapshot_as_thin none) is left out; set, it is written', () => {
    const v = freshVolume();
    expect(volumeSpec.encode({ ...v, metadata: { persisted: { snapshot_as_thin: null } } })).not.toContain(
      'metadata',
    );
    expect(volumeSpec.encode({ ...v, metadata: { persisted: { snapshot_as_thin: true } } })).toContain(
      ',"metadata":{"persisted":{"snapshot_as_thin":true}}}',
    );
  });

  it('stored without the optional fields, a VolumeSpec decodes them as absent and keeps them absent', () => {
    const json = volumeSpec.encode(freshVolume());
    const v = volumeSpec.decode('k', json);
    expect('content_source' in v || 'metadata' in v || 'max_snapshots' in v).toBe(false);
    expect(volumeSpec.encode(v)).toBe(json);
  });

  it('a NodeSpec leaves out empty labels / draining volumes and every none', () => {
    const n: NodeSpec = { id: 'node-1', endpoint: '10.0.0.1:10124', labels: {}, draining_volumes: [] };
    expect(nodeSpec.encode(n)).toBe('{"id":"node-1","endpoint":"10.0.0.1:10124"}');
    const decoded = nodeSpec.decode('k', '{"id":"node-1","endpoint":"10.0.0.1:10124"}');
    expect(decoded.labels).toEqual({});
    expect(decoded.draining_volumes).toEqual([]);
    expect(decoded.cordon_drain_state).toBeUndefined();
    const nqn = 'nqn.2019-05.io.openebs:node-name:node-1';
    expect(nodeSpec.encode({ ...decoded, node_nqn: nqn, version: 'v2.7.0' })).toBe(
      `{"id":"node-1","endpoint":"10.0.0.1:10124","node_nqn":"${nqn}","version":"v2.7.0"}`,
    );
  });

  it('a ReplicaSpec leaves out kind when regular or none', () => {
    const r: ReplicaSpec = {
      name: ids.replica,
      uuid: ids.replica,
      size: 1,
      pool: 'p',
      share: 'none',
      thin: false,
      status: 'Creating',
      managed: true,
      owners: { volume: null, disown_all: false },
      operation: null,
      allowed_hosts: [],
    };
    expect(replicaSpec.encode(r)).not.toContain('kind');
    expect(replicaSpec.encode({ ...r, kind: 'regular' })).not.toContain('kind');
    expect(replicaSpec.encode({ ...r, kind: 'snapshot' })).toMatch(
      /"allowed_hosts":\[\],"kind":"snapshot"\}$/,
    );
  });

  it('CoreRegistryConfig writes mayastor_compat_v1 only while true', () => {
    const c: CoreRegistryConfig = { id: 'db98f8bb-4afc-45d0-85b9-24c99cc443f2', registration: 'Automatic' };
    expect(coreRegistryConfig.encode({ ...c, mayastor_compat_v1: false })).not.toContain('compat');
    expect(coreRegistryConfig.encode({ ...c, mayastor_compat_v1: true })).toContain(
      '"mayastor_compat_v1":true',
    );
  });
});

describe('old-format values decode with defaults (docs/mayastor-compat.md §1.6)', () => {
  const oldVolume = `{"uuid":"${ids.volume}","size":5,"labels":null,"num_replicas":1,"status":{"Created":"Online"},"policy":{"self_heal":true},"topology":null,"last_nexus_id":null,"operation":null,"target":{"node":"node-1","nexus":"${ids.nexus}","protocol":"nvmf"}}`;

  it('a target without config/frontend/active gets Mayastor defaults, and thin/publish_context defaults', () => {
    const v = volumeSpec.decode('k', oldVolume);
    expect(v.target).toMatchObject({ active: true, config: defaultNvmfConfig(), frontend: { host_acl: [] } });
    expect(v.thin).toBe(false);
    expect(v.publish_context).toBeNull();
    expect(v.affinity_group).toBeNull();
  });

  it('written back unchanged, it stays in the old format (Mayastor reads it identically)', () => {
    expect(volumeSpec.encode(volumeSpec.decode('k', oldVolume))).toBe(oldVolume);
  });

  it('a changed default is written out', () => {
    const v = volumeSpec.decode('k', oldVolume);
    const out = volumeSpec.encode({ ...v, target: { ...v.target!, active: false } });
    expect(out).toContain('"protocol":"nvmf","active":false}');
  });

  it('missing Option fields read as null, missing policy as self_heal true', () => {
    const v = volumeSpec.decode(
      'k',
      `{"uuid":"${ids.volume}","size":5,"num_replicas":1,"status":"Creating"}`,
    );
    expect(v).toMatchObject({
      labels: null,
      topology: null,
      operation: null,
      target: null,
      policy: { self_heal: true },
    });
  });
});
