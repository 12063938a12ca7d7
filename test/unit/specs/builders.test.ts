import { describe, expect, it } from 'vitest';
import { newVolumeSpec } from '../../../src/daemons/core/ops/volume-create.js';
import { localReplicaUri, replicaUuidOfUri, withReplicaUuid } from '../../../src/lib/child-uri.js';
import {
  cloneSpec,
  hostNqn,
  newTargetConfig,
  reservationKeyOf,
  unknownFields,
  volumeSnapshot,
  volumeSpec,
} from '../../../src/lib/specs/index.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { ids, space, volumeReference } from './fixtures.js';

const volumeKey = objectKey(space, 'VolumeSpec', ids.volume);

describe('values storctl builds, as Mayastor builds them', () => {
  it('a new target: the nexus uuid low 64 bits as reservation key, controller ids after the previous', () => {
    const nexus = '8f5d061c-3b2a-4e6f-8c7d-9e0a1b2c3d4e';
    const first = newTargetConfig({ node: 'n1', nexus, protocol: 'nbd', frontendNode: 'w1', previous: null });
    expect(first.config).toEqual({
      controllerIdRange: { start: 1, end: 2 },
      reservationKey: 0x8c7d9e0a1b2c3d4en,
      reservationType: 'ExclusiveAccess',
      preemptPolicy: 'Holder',
    });
    expect(first.frontend.host_acl).toEqual([{ node_name: 'w1', node_nqn: hostNqn('w1') }]);
    expect(hostNqn('w1')).toBe('nqn.2019-05.io.openebs:node-name:w1');
    const second = newTargetConfig({ node: 'n2', nexus, protocol: 'nbd', previous: first });
    expect(second.config.controllerIdRange).toEqual({ start: 3, end: 4 });
    expect(second.frontend.host_acl).toEqual([]);
    const last = { ...first, config: { ...first.config, controllerIdRange: { start: 65518, end: 65519 } } };
    expect(
      newTargetConfig({ node: 'n', nexus, protocol: null, previous: last }).config.controllerIdRange,
    ).toEqual({
      start: 1,
      end: 2,
    });
    expect(reservationKeyOf('00000000-0000-0000-ffff-ffffffffffff')).toBe(2n ** 64n - 1n);
  });

  it('a new target written in a VolumeSpec decodes, and its u64 key stays exact', () => {
    const v = volumeSpec.decode(volumeKey, volumeReference);
    v.target = newTargetConfig({ node: 'n1', nexus: ids.nexus, protocol: 'nbd', previous: v.target });
    const text = volumeSpec.encode(v);
    expect(text).toContain(
      `"controllerIdRange":{"start":13,"end":14},"reservationKey":${0x8c7d9e0a1b2c3d4en}`,
    );
    expect(volumeSpec.decode(volumeKey, text).target?.config.reservationKey).toBe(
      reservationKeyOf(ids.nexus),
    );
  });

  it('cloneSpec keeps the fields storctl does not model (structuredClone would drop them)', () => {
    const stored = volumeReference.replace(
      '"affinity_group":null',
      '"affinity_group":null,"future_field":{"x":1}',
    );
    const v = volumeSpec.decode(volumeKey, stored);
    const copy = cloneSpec(v);
    copy.num_replicas = 3;
    expect(unknownFields(copy)).toEqual({ future_field: { x: 1 } });
    expect(volumeSpec.encode(copy)).toBe(stored.replace('"num_replicas":2', '"num_replicas":3'));
    expect(v.num_replicas).toBe(2);
    expect(volumeSpec.encode(structuredClone(v))).not.toContain('future_field');
  });

  it("reads every SnapshotMeta variant of a replica snapshot ('Default', Replica, Volume)", () => {
    const snap = (meta: string) =>
      `{"status":{"Created":null},"spec":{"source_id":"${ids.volume}","uuid":"${ids.snapshot}"},"metadata":{"operation":null,"timestamp":null,"spec_size":1,"size":1,"total_allocated_size":0,"txn_id":"1","transactions":{"1":[{"status":{"Created":null},"spec":{"source_id":{"replica_id":"${ids.replica}","pool_id":"p","pool_uuid":"${ids.poolUuid}"},"uuid":"${ids.replicaSnapshot}"},"metadata":{"operation":null,"timestamp":null,"source_spec_size":1,"size":1,"allocated_size":0,"meta":${meta}}}]}}}`;
    const key = objectKey(space, 'VolumeSnapshot', ids.snapshot);
    for (const meta of [
      '"Default"',
      '{"Replica":{"txn_id":"1"}}',
      `{"Volume":{"parent":"${ids.snapshot}","txn_id":"1"}}`,
    ])
      expect(volumeSnapshot.encode(volumeSnapshot.decode(key, snap(meta)))).toBe(snap(meta));
    expect(() => volumeSnapshot.decode(key, snap('"Volume"'))).toThrow(
      /metadata\.transactions\.1\[0\]\.metadata\.meta/,
    );
  });
});

describe('child URIs', () => {
  it('are built and read in one place', () => {
    expect(localReplicaUri(ids.replica)).toBe(`bdev:///${ids.replica}?uuid=${ids.replica}`);
    expect(withReplicaUuid('nbd://127.0.0.1:10809/x', ids.replica)).toBe(
      `nbd://127.0.0.1:10809/x?uuid=${ids.replica}`,
    );
    expect(replicaUuidOfUri(localReplicaUri(ids.replica))).toBe(ids.replica);
    expect(replicaUuidOfUri(`nbd://127.0.0.1:10809/${ids.replica}`)).toBe(ids.replica);
    expect(replicaUuidOfUri('bdev:///')).toBeNull();
    expect(replicaUuidOfUri('not a uri')).toBeNull();
  });
});

describe('what core writes for a new volume', () => {
  it("a clone's content_source goes right after thin, as serde writes it, whatever order core built it in", () => {
    const src = '456122b1-0f9e-4d8c-a7b6-5c4d3e2f1a09';
    const v = newVolumeSpec(
      ids.volume,
      {
        size: 1 << 20,
        replicas: 1,
        thin: true,
        labels: null,
        policy: { self_heal: true },
        topology: null,
        affinity_group: null,
      },
      { content_source: { Snapshot: [ids.snapshot, src] } },
    );
    const text = volumeSpec.encode(v);
    expect(text).toContain(
      `"thin":true,"content_source":{"Snapshot":["${ids.snapshot}","${src}"]},"target":null`,
    );
    expect(volumeSpec.decode(volumeKey, text).content_source).toEqual({ Snapshot: [ids.snapshot, src] });
  });
});
