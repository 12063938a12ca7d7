import { describe, expect, it } from 'vitest';
import {
  settleNexus,
  settleReplica,
  settleSnapshot,
  settleVolume,
} from '../../../src/daemons/core/recovery.js';
import {
  type NexusSpec,
  newTargetConfig,
  type ReplicaSpec,
  type VolumeSnapshot,
  type VolumeSpec,
} from '../../../src/lib/specs/index.js';
import { createdVolumeSpec } from '../../helpers/specs.js';

/**
 * The recovery decision table (docs/mayastor-compat.md §1.5 handle_incomplete_ops): result true → the operation's
 * effect is committed; false, or null ("we must have crashed") → rolled back.
 */
const X1 = '00000000-0000-4000-8000-000000000001';
const X2 = '00000000-0000-4000-8000-000000000002';
const volume = (over: Partial<VolumeSpec>): VolumeSpec =>
  createdVolumeSpec('v1', {
    size: 100,
    target: newTargetConfig({ node: 'n1', nexus: X1, protocol: 'nbd', previous: null }),
    ...over,
  });

describe('recovery decision table', () => {
  it('volume SetReplica: true commits the replica count, false and null roll it back', () => {
    for (const [result, replicas] of [
      [true, 2],
      [false, 1],
      [null, 1],
    ] as const) {
      const { fixed, committed } = settleVolume(
        volume({ operation: { operation: { SetReplica: 2 }, result } }),
      );
      expect({ result, replicas: fixed.num_replicas, op: fixed.operation, committed }).toEqual({
        result,
        replicas,
        op: null,
        committed: result === true,
      });
    }
  });

  it('volume Create: true → Created, false/null → Deleting (the GC destroys what was made)', () => {
    const creating = (result: boolean | null) =>
      volume({ status: 'Creating', operation: { operation: 'Create', result } });
    expect(settleVolume(creating(true)).fixed.status).toEqual({ Created: 'Online' });
    expect(settleVolume(creating(false)).fixed.status).toBe('Deleting');
    expect(settleVolume(creating(null)).fixed.status).toBe('Deleting');
  });

  it('volume Publish2/Unpublish/Share/Unshare/Resize commit their effect only on true', () => {
    const config = newTargetConfig({ node: 'n2', nexus: X2, protocol: 'nbd', previous: null });
    const pub = (result: boolean | null) =>
      settleVolume(
        volume({
          target: null,
          operation: { operation: { Publish2: { config, publish_context: {} } }, result },
        }),
      ).fixed;
    expect(pub(true).target).toEqual(config);
    expect(pub(true).last_nexus_id).toBe(X2);
    expect(pub(null).target).toBeNull();
    expect(
      settleVolume(volume({ operation: { operation: 'Unpublish', result: true } })).fixed.target?.active,
    ).toBe(false);
    expect(
      settleVolume(volume({ operation: { operation: 'Unpublish', result: false } })).fixed.target?.active,
    ).toBe(true);
    expect(
      settleVolume(volume({ operation: { operation: 'Unshare', result: true } })).fixed.target?.protocol,
    ).toBe(null);
    expect(
      settleVolume(volume({ operation: { operation: 'Unshare', result: null } })).fixed.target?.protocol,
    ).toBe('nbd');
    expect(
      settleVolume(
        volume({
          target: { ...config, protocol: null },
          operation: { operation: { Share: 'nbd' }, result: true },
        }),
      ).fixed.target?.protocol,
    ).toBe('nbd');
    expect(settleVolume(volume({ operation: { operation: { Resize: 200 }, result: true } })).fixed.size).toBe(
      200,
    );
    expect(
      settleVolume(volume({ operation: { operation: { Resize: 200 }, result: false } })).fixed.size,
    ).toBe(100);
  });

  it('volume Destroy stays Deleting whatever the result (the volume GC finishes it)', () => {
    for (const result of [true, false, null])
      expect(
        settleVolume(volume({ status: 'Deleting', operation: { operation: 'Destroy', result } })).fixed
          .status,
      ).toBe('Deleting');
  });

  it('replica and nexus creates: true → Created, otherwise Deleting (replica disowned)', () => {
    const replica = (result: boolean | null): ReplicaSpec => ({
      name: 'r',
      uuid: 'r1',
      size: 1,
      pool: 'p',
      share: 'none',
      thin: false,
      status: 'Creating',
      managed: true,
      owners: { volume: 'v1', disown_all: false },
      operation: { operation: 'Create', result },
      allowed_hosts: [],
    });
    expect(settleReplica(replica(true))).toMatchObject({
      status: { Created: 'online' },
      owners: { volume: 'v1' },
    });
    expect(settleReplica(replica(null))).toMatchObject({ status: 'Deleting', owners: { volume: null } });
    expect(settleReplica(replica(false)).operation).toBeNull();
    const nexus = (
      result: boolean | null,
      operation: NexusSpec['operation'] = { operation: 'Create', result },
    ) =>
      ({
        uuid: 'x1',
        name: 'x1',
        node: 'n1',
        children: [],
        size: 1,
        spec_status: 'Creating',
        share: 'none',
        managed: true,
        owner: 'v1',
        operation,
        nvmf_config: null,
        status_info: { shutdown_failed: false },
        allowed_hosts: [],
      }) as NexusSpec;
    expect(settleNexus(nexus(true)).spec_status).toEqual({ Created: 'Online' });
    expect(settleNexus(nexus(false)).spec_status).toBe('Deleting');
    expect(settleNexus(nexus(null)).spec_status).toBe('Deleting');
    const child = { Uri: 'nbd://x' };
    const created = { ...nexus(null), spec_status: { Created: 'Online' } } as NexusSpec;
    expect(
      settleNexus({ ...created, operation: { operation: { AddChild: child }, result: true } }).children,
    ).toEqual([child]);
    expect(
      settleNexus({ ...created, operation: { operation: { AddChild: child }, result: null } }).children,
    ).toEqual([]);
  });

  it('snapshot create: true → Created, null → stays Creating (LeaveAsIs, a retry completes it) with the replica snapshots it logged recorded', () => {
    const rs = (uuid: string) =>
      ({
        status: 'Creating',
        spec: { source_id: { replica_id: X1, pool_id: 'p1', pool_uuid: X2 }, uuid },
        metadata: {
          operation: null,
          timestamp: null,
          source_spec_size: 1,
          size: 0,
          allocated_size: 0,
          meta: 'Default',
        },
      }) as const;
    const taken = { ...rs('r1'), status: { Created: null } };
    const snap = (result: boolean | null) =>
      ({
        status: 'Creating',
        spec: { source_id: 'v1', uuid: 's1' },
        metadata: {
          operation: { operation: { Create: { txn_id: '2', replicas: [rs('r1'), rs('r2')] } }, result },
          timestamp: null,
          spec_size: 1,
          size: 0,
          total_allocated_size: 0,
          txn_id: '2',
          transactions: { '1': [rs('r0')], '2': [taken] },
        },
      }) as VolumeSnapshot;
    expect(settleSnapshot(snap(true)).status).toEqual({ Created: null });
    const settled = settleSnapshot(snap(null));
    expect(settled.status).toBe('Creating');
    expect(settled.metadata.operation).toBeNull();
    // The crash may have come after an io-engine took r2: logged, it is recorded for a delete to destroy.
    expect(settled.metadata.transactions).toEqual({ '1': [rs('r0')], '2': [taken, rs('r2')] });
  });
});
