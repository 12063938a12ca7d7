import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsPrefix, nexusInfoKey, objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { runStorctl } from '../../helpers/storctl.js';

/*
 * `storctl doctor store` on a store nothing runs against: each inconsistency is written on purpose
 * (as Mayastor-format JSON, straight into the store), beside healthy records that must not be
 * reported or touched; the built CLI finds each one with its severity and fix, exits 10/11, and
 * --fix deletes exactly the safe ones.
 */

const space = { clusterId: `doctor-${process.pid}`, namespace: 'default' };
const key = (type: string, id: string) => objectKey(space, type, id);
const uuid = () => crypto.randomUUID();

const pool = (id: string, node = 'node-1') =>
  JSON.stringify({
    node,
    id,
    disks: [`/tmp/${id}`],
    status: { Created: 'Online' },
    labels: null,
    operation: null,
  });
const replica = (id: string, poolId: string, owner: string | null) =>
  JSON.stringify({
    name: id,
    uuid: id,
    size: 1048576,
    pool: poolId,
    share: 'none',
    thin: false,
    status: { Created: 'online' },
    managed: true,
    owners: { volume: owner, disown_all: false },
    operation: null,
  });
const volume = (
  id: string,
  replicas: number,
  extra: { target?: { node: string; nexus: string }; status?: unknown; operation?: unknown } = {},
) =>
  JSON.stringify({
    uuid: id,
    size: 1048576,
    labels: null,
    num_replicas: replicas,
    status: extra.status ?? { Created: 'Online' },
    policy: { self_heal: true },
    topology: null,
    last_nexus_id: null,
    operation: extra.operation ?? null,
    thin: false,
    target: extra.target ? { ...extra.target, protocol: 'nbd', active: true } : null,
    publish_context: null,
    affinity_group: null,
  });
const nexus = (id: string, owner: string, children: string[]) =>
  JSON.stringify({
    uuid: id,
    name: owner,
    node: 'node-1',
    children: children.map((c) => ({ Replica: { uuid: c, share_uri: `bdev:///${c}?uuid=${c}` } })),
    size: 1048576,
    spec_status: { Created: 'Online' },
    share: 'none',
    managed: true,
    owner,
    operation: null,
  });

interface Finding {
  severity: string;
  check: string;
  subject: string;
  problem: string;
  fix: string;
  fixable: boolean;
}
interface Report {
  healthy: boolean;
  counts: { error: number; warning: number };
  findings: Finding[];
  fixed?: { subject: string; check: string; result: string }[];
  after?: Report;
}

describe.each(['embedded', 'etcd'] as const)('storctl doctor store (built CLI, %s store)', (backend) => {
  let etcd: EtcdServer | undefined;
  let dir: string;
  let storeUrl: string;
  let store: Store;
  const doctor = async (...args: string[]) => {
    const r = await runStorctl([
      'doctor',
      'store',
      '--store',
      storeUrl,
      '--cluster-id',
      space.clusterId,
      ...args,
    ]);
    return { ...r, report: args.includes('json') ? (JSON.parse(r.stdout) as Report) : undefined };
  };

  // Healthy: pool p1, volume `good` with its one replica; a published volume with its nexus.
  const good = uuid();
  const goodReplica = uuid();
  const published = uuid();
  const publishedReplica = uuid();
  const publishedNexus = uuid();
  // Broken, one per check.
  const creating = uuid(); // pending Create, dated by an event written with it
  const strayReplica = uuid(); // on a pool with no PoolSpec
  const headless = uuid(); // published on a nexus whose child replica has no spec; no replicas
  const headlessNexus = uuid();
  const missingChild = uuid();
  const nexusless = uuid(); // published on a nexus with no NexusSpec
  const nexuslessReplica = uuid();
  const short = uuid(); // wants 3 replicas, has 1
  const shortReplica = uuid();
  const ownerless = uuid(); // managed replica, no owner
  const deleted = uuid(); // a volume that is gone: its NexusInfo and SwitchOver remain
  const deletedNexus = uuid();
  const undecodable = uuid();
  let deadLease = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-doctor-'));
    if (backend === 'etcd') {
      etcd = await startEtcd();
      storeUrl = etcd.url;
    } else storeUrl = `sqlite:${join(dir, 'store.db')}`;
    store = await openStore(storeUrl);
    // A lease that was granted and revoked: the lease owner record names a dead holder.
    const lease = await store.grantLease(30, { keepAlive: false });
    deadLease = lease.id;
    await lease.revoke();
  }, 60_000);

  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an empty store is healthy: exit 0', async () => {
    const r = await doctor();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Healthy: nothing to fix.');
  });

  it('a consistent cluster is healthy: exit 0, no findings', async () => {
    await store.put(key('PoolSpec', 'p1'), pool('p1'));
    await store.put(key('VolumeSpec', good), volume(good, 1));
    await store.put(key('ReplicaSpec', goodReplica), replica(goodReplica, 'p1', good));
    await store.put(
      key('VolumeSpec', published),
      volume(published, 1, { target: { node: 'node-1', nexus: publishedNexus } }),
    );
    await store.put(key('ReplicaSpec', publishedReplica), replica(publishedReplica, 'p1', published));
    await store.put(key('NexusSpec', publishedNexus), nexus(publishedNexus, published, [publishedReplica]));
    await store.put(
      nexusInfoKey(space, publishedNexus, published),
      JSON.stringify({ children: [{ healthy: true, uuid: publishedReplica }], clean_shutdown: false }),
    );
    const r = await doctor('-o', 'json');
    expect(r.code, r.stderr).toBe(0);
    expect(r.report).toMatchObject({ healthy: true, findings: [], counts: { error: 0, warning: 0 } });
  });

  it('finds every inconsistency made on purpose, with severity and fix; exit 11', async () => {
    // A pending Create written 3 hours ago, with the event core writes in the same transaction.
    const threeHoursAgo = Date.now() - 3 * 3_600_000 - 60_000;
    await store.txn({
      compare: [],
      success: [
        {
          type: 'put',
          key: key('VolumeSpec', creating),
          value: volume(creating, 1, {
            status: 'Creating',
            operation: { operation: 'Create', result: null },
          }),
        },
        {
          type: 'put',
          key: `${eventsPrefix(space)}${String(threeHoursAgo).padStart(15, '0')}-000001`,
          value: JSON.stringify({
            time: new Date(threeHoursAgo).toISOString(),
            resource: 'volume',
            id: creating,
          }),
        },
      ],
    });
    await store.put(key('ReplicaSpec', strayReplica), replica(strayReplica, 'gone-pool', good));
    await store.put(
      key('VolumeSpec', headless),
      volume(headless, 1, { target: { node: 'node-1', nexus: headlessNexus } }),
    );
    await store.put(key('NexusSpec', headlessNexus), nexus(headlessNexus, headless, [missingChild]));
    await store.put(
      key('VolumeSpec', nexusless),
      volume(nexusless, 1, { target: { node: 'node-1', nexus: uuid() } }),
    );
    await store.put(key('ReplicaSpec', nexuslessReplica), replica(nexuslessReplica, 'p1', nexusless));
    await store.put(key('VolumeSpec', short), volume(short, 3));
    await store.put(key('ReplicaSpec', shortReplica), replica(shortReplica, 'p1', short));
    await store.put(key('ReplicaSpec', ownerless), replica(ownerless, 'p1', null));
    await store.put(
      nexusInfoKey(space, deletedNexus, deleted),
      JSON.stringify({ children: [], clean_shutdown: true }),
    );
    await store.put(
      key('SwitchOver', deleted),
      JSON.stringify({
        callback_uri: '127.0.0.1:50053',
        node_name: 'node-1',
        volume: deleted,
        operation: { operation: 'ReplacePath', result: null },
        timestamp: new Date().toISOString(),
        existing_nqn: `nqn.2019-05.io.openebs:${deleted}`,
        new_path: null,
        retry_count: 0,
        reuse_existing: true,
        publish_context: null,
      }),
    );
    await store.put(
      key('StoreLeaseOwner', 'CoreAgent'),
      JSON.stringify({ kind: 'CoreAgent', lease_id: deadLease, instance_name: 'core-gone' }),
    );
    // In progress on an existing volume for an hour: reported, but ha-cluster's to finish.
    await store.put(
      key('SwitchOver', good),
      JSON.stringify({
        callback_uri: '127.0.0.1:50053',
        node_name: 'node-1',
        volume: good,
        operation: { operation: 'RepublishVolume', result: null },
        timestamp: new Date(Date.now() - 3_600_000).toISOString(),
        existing_nqn: `nqn.2019-05.io.openebs:${good}`,
        new_path: null,
        retry_count: 4,
        reuse_existing: true,
        publish_context: null,
      }),
    );
    await store.put(key('VolumeSpec', undecodable), `{"uuid":"${undecodable}","size":"big"}`);

    const r = await doctor('-o', 'json');
    expect(r.code, r.stderr).toBe(11);
    const findings = r.report!.findings;
    const find = (check: string, subject: string) => {
      const f = findings.find((x) => x.check === check && x.subject.includes(subject));
      expect(f, `${check} ${subject} in ${JSON.stringify(findings, null, 1)}`).toBeDefined();
      return f!;
    };
    expect(find('undecodable', undecodable)).toMatchObject({ severity: 'error', fixable: false });
    expect(find('undecodable', undecodable).problem).toContain("field 'size'");
    const pending = find('pending-operation', `VolumeSpec/${creating}`);
    expect(pending).toMatchObject({ severity: 'warning', fixable: false });
    expect(pending.problem).toBe('operation Create in progress, pending for 3h');
    expect(pending.fix).toContain('start core');
    expect(find('missing-pool', strayReplica)).toMatchObject({ severity: 'error' });
    expect(find('missing-pool', strayReplica).problem).toContain('gone-pool');
    expect(find('missing-replica', headlessNexus).problem).toContain(missingChild);
    expect(find('missing-replica', headlessNexus).fix).toContain(`storctl volume publish ${headless}`);
    expect(find('missing-nexus', nexusless)).toMatchObject({ severity: 'error' });
    expect(find('volume-without-replicas', headless)).toMatchObject({ severity: 'error' });
    expect(find('under-replicated', short)).toMatchObject({
      severity: 'warning',
      problem: '1 of 3 replicas',
    });
    expect(find('replica-without-owner', ownerless)).toMatchObject({ severity: 'warning', fixable: false });
    expect(find('replica-without-owner', ownerless).fix).toContain('storctl orphans --delete');
    expect(find('orphan-nexus-info', deletedNexus)).toMatchObject({ severity: 'warning', fixable: true });
    expect(find('stale-switchover', deleted)).toMatchObject({ severity: 'warning', fixable: true });
    expect(find('dead-lease-owner', 'CoreAgent')).toMatchObject({ severity: 'warning', fixable: true });
    expect(find('stale-switchover', good)).toMatchObject({
      severity: 'warning',
      fixable: false,
      problem: 'switchover at stage RepublishVolume since 1h ago (retry 4), past the 10m grace',
    });
    // Nothing healthy is reported (`good` only for its switchover).
    expect(findings.filter((f) => f.subject.includes(good)).map((f) => f.check)).toEqual([
      'stale-switchover',
    ]);
    for (const id of [goodReplica, published, publishedReplica, publishedNexus])
      expect(findings.filter((f) => f.subject.includes(id))).toEqual([]);
    // Errors first.
    const firstWarning = findings.findIndex((f) => f.severity === 'warning');
    expect(findings.slice(firstWarning).every((f) => f.severity === 'warning')).toBe(true);
    expect(r.report!.counts.error).toBe(findings.filter((f) => f.severity === 'error').length);

    // The table names each fix.
    const text = await doctor();
    expect(text.code).toBe(11);
    expect(text.stdout).toMatch(/^error +missing-pool +ReplicaSpec\//m);
    expect(text.stdout).toContain(`fix: \`storctl doctor store --fix\``);
    expect(text.stdout).toContain('Run `storctl doctor store --fix` to repair 3 of them.');
  });

  it('--fix without a terminal and without -y changes nothing: exit 2', async () => {
    const r = await doctor('--fix');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('add -y');
    expect(await store.get(key('SwitchOver', deleted))).not.toBeNull();
  });

  it('--fix -y deletes the safe records only, and reports what remains', async () => {
    const r = await doctor('--fix', '-y', '-o', 'json');
    expect(r.code, r.stderr).toBe(11); // the errors stay: they need core or a decision
    expect(r.report!.fixed!.map((f) => [f.check, f.result]).sort()).toEqual([
      ['dead-lease-owner', 'deleted'],
      ['orphan-nexus-info', 'deleted'],
      ['stale-switchover', 'deleted'],
    ]);
    expect(r.report!.after!.findings.filter((f) => f.fixable)).toEqual([]);
    expect(await store.get(key('SwitchOver', deleted))).toBeNull();
    expect(await store.get(nexusInfoKey(space, deletedNexus, deleted))).toBeNull();
    expect(await store.get(key('StoreLeaseOwner', 'CoreAgent'))).toBeNull();
    // Everything else is as it was: the healthy NexusInfo, the broken specs.
    expect(await store.get(nexusInfoKey(space, publishedNexus, published))).not.toBeNull();
    expect(await store.get(key('ReplicaSpec', ownerless))).not.toBeNull();
    expect(await store.get(key('SwitchOver', good))).not.toBeNull();
  });

  it('down to warnings only: exit 10; a live lease owner is not reported', async () => {
    for (const k of [
      key('VolumeSpec', undecodable),
      key('ReplicaSpec', strayReplica),
      key('VolumeSpec', headless),
      key('NexusSpec', headlessNexus),
      key('VolumeSpec', nexusless),
    ])
      await store.delete(k);
    const lease = await store.grantLease(30);
    try {
      await store.put(
        key('StoreLeaseOwner', 'CoreAgent'),
        JSON.stringify({ kind: 'CoreAgent', lease_id: lease.id, instance_name: 'core-live' }),
      );
      const r = await doctor('-o', 'json');
      expect(r.code, r.stderr).toBe(10);
      expect(r.report!.counts.error).toBe(0);
      expect(r.report!.findings.map((f) => f.check)).not.toContain('dead-lease-owner');
      // With core alive, a pending operation is core's to settle: the fix says so.
      expect(r.report!.findings.find((f) => f.check === 'pending-operation')?.fix).toContain(
        'core is running',
      );
    } finally {
      await lease.revoke();
    }
  });

  it('an unreachable store: exit 5', async () => {
    const r = await runStorctl(['doctor', 'store', '--store', 'etcd://127.0.0.1:1']);
    expect(r.code).toBe(5);
  });
});
