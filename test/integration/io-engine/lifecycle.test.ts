import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nexusInfoKey, objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { waitFor } from '../../helpers/wait.js';
import { CLUSTER_ID, code, type RunningEngine, startEngine } from './engines.js';
import { qemuIo } from './nbd-tools.js';

const MiB = 1024 * 1024;
const space = { clusterId: CLUSTER_ID, namespace: 'default' };

describe('io-engine lifecycle through gRPC', () => {
  let dir: string;
  let engine: RunningEngine;
  let store: Store;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-'));
    engine = await startEngine(dir, 'node-a', { heartbeatTtl: 2 });
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
  });

  afterAll(async () => {
    await engine?.stop('SIGKILL');
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('registers the node record and a lease-bound liveness key', async () => {
    const spec = await store.get(objectKey(space, 'NodeSpec', 'node-a'));
    expect(spec!.value).toBe(JSON.stringify({ id: 'node-a', endpoint: engine.grpcEndpoint }));
    const live = await store.get(
      `/openebs.io/mayastor/apis/v0/clusters/${CLUSTER_ID}/namespaces/default/storctl/NodeLiveness/node-a`,
    );
    expect(live!.lease).not.toBe('0');
    expect(JSON.parse(live!.value)).toMatchObject({
      node: 'node-a',
      grpcEndpoint: engine.grpcEndpoint,
      nbdEndpoint: engine.nbdEndpoint,
    });
    expect(await store.leaseTimeToLive(live!.lease)).toBeGreaterThan(0);
    const info = await engine.client.getNodeInfo();
    expect(info).toMatchObject({
      nodeId: 'node-a',
      grpcEndpoint: engine.grpcEndpoint,
      nbdEndpoint: engine.nbdEndpoint,
    });
  });

  it('manages pools with capacity accounting and refuses what it must', async () => {
    const pool = await engine.client.createPool({ name: 'p1', capacity: 64 * MiB });
    expect(pool).toMatchObject({
      name: 'p1',
      capacity: 64 * MiB,
      used: 0,
      committed: 0,
      free: 64 * MiB,
      state: 'Online',
    });
    expect(await code(engine.client.createPool({ name: 'p1', capacity: MiB }))).toMatch(
      /^ALREADY_EXISTS: pool 'p1'/,
    );
    expect(await code(engine.client.createPool({ name: '../x', capacity: MiB }))).toMatch(
      /^INVALID_ARGUMENT: pool name/,
    );
    expect(await code(engine.client.createPool({ name: 'p2', capacity: 0 }))).toMatch(
      /^INVALID_ARGUMENT: pool capacity/,
    );
    expect(await code(engine.client.createPool({ name: 'p2', capacity: MiB, disk: 'relative/dir' }))).toMatch(
      /^INVALID_ARGUMENT/,
    );
    // The API cannot make an io-engine write outside its --pool-dir.
    expect(
      await code(engine.client.createPool({ name: 'p2', capacity: MiB, disk: '/etc/storctl-pool' })),
    ).toMatch(/^INVALID_ARGUMENT: pool disk '\/etc\/storctl-pool' must lie under the node's --pool-dir/);
    expect(await code(engine.client.getPool('nope'))).toMatch(/^NOT_FOUND: pool 'nope'/);
    expect(await code(engine.client.destroyPool('nope'))).toMatch(/^NOT_FOUND/);
    expect(await code(engine.client.importPool({ name: 'ghost' }))).toMatch(/^NOT_FOUND: pool metadata/);

    const thick = await engine.client.createReplica({ uuid: randomUUID(), pool: 'p1', size: 16 * MiB });
    expect(thick.allocated).toBeGreaterThanOrEqual(16 * MiB);
    const thin = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'p1',
      size: 48 * MiB,
      thin: true,
    });
    expect(thin).toMatchObject({ thin: true, share: 'none', pool: 'p1', size: 48 * MiB });
    expect(thin.uri).toBe(`bdev:///${thin.uuid}?uuid=${thin.uuid}`);
    // Listed replicas report what each has allocated on disk, as GetReplica does: the thick one its
    // whole size, the thin one nothing yet (core's REST replica and volume usage come from here).
    const listed = new Map((await engine.client.listReplicas('p1')).map((r) => [r.uuid, r.allocated]));
    expect(listed.get(thick.uuid)).toBe((await engine.client.getReplica(thick.uuid)).allocated);
    expect(listed.get(thick.uuid)).toBeGreaterThanOrEqual(16 * MiB);
    expect(listed.get(thin.uuid)).toBe(0);
    let p = await engine.client.getPool('p1');
    expect(p.committed).toBe(64 * MiB);
    expect(p.used).toBeGreaterThanOrEqual(16 * MiB);
    expect(p.free).toBeLessThanOrEqual(48 * MiB);
    expect(p.replicaCount).toBe(2);

    expect(
      await code(engine.client.createReplica({ uuid: randomUUID(), pool: 'p1', size: 60 * MiB })),
    ).toMatch(/^RESOURCE_EXHAUSTED: pool 'p1' has \d+ bytes free/);
    expect(
      await code(engine.client.createReplica({ uuid: randomUUID(), pool: 'p1', size: 65 * MiB, thin: true })),
    ).toMatch(/^RESOURCE_EXHAUSTED/);
    expect(
      await code(engine.client.createReplica({ uuid: thin.uuid, pool: 'p1', size: MiB, thin: true })),
    ).toMatch(/^ALREADY_EXISTS: replica/);
    expect(await code(engine.client.createReplica({ uuid: randomUUID(), pool: 'nope', size: MiB }))).toMatch(
      /^NOT_FOUND: pool 'nope'/,
    );
    expect(await code(engine.client.createReplica({ uuid: 'a/b', pool: 'p1', size: MiB }))).toMatch(
      /^INVALID_ARGUMENT/,
    );

    const grown = await engine.client.resizeReplica(thin.uuid, 56 * MiB);
    expect(grown.size).toBe(56 * MiB);
    expect((await stat(join(engine.poolDir, 'p1', 'replicas', `${thin.uuid}.img`))).size).toBe(56 * MiB);
    expect(await code(engine.client.resizeReplica(thin.uuid, MiB))).toMatch(
      /^INVALID_ARGUMENT: replica .* cannot shrink/,
    );
    expect(await code(engine.client.resizeReplica(thick.uuid, 80 * MiB))).toMatch(/^RESOURCE_EXHAUSTED/);
    expect(await code(engine.client.resizeReplica(randomUUID(), 80 * MiB))).toMatch(/^NOT_FOUND: replica/);

    expect(await code(engine.client.destroyPool('p1'))).toMatch(
      /^FAILED_PRECONDITION: pool 'p1' still holds 2 replica/,
    );
    await engine.client.destroyReplica(thick.uuid);
    await engine.client.destroyReplica(thin.uuid);
    expect(await code(engine.client.destroyReplica(thin.uuid))).toMatch(/^NOT_FOUND/);
    p = await engine.client.getPool('p1');
    expect(p).toMatchObject({ committed: 0, used: 0, replicaCount: 0 });
    await engine.client.destroyPool('p1');
    expect(await engine.client.listPools()).toEqual([]);
    await expect(stat(join(engine.poolDir, 'p1'))).rejects.toThrow();
  });

  it('takes snapshots, clones them, and refuses what it must', async () => {
    await engine.client.createPool({ name: 'snap', capacity: 64 * MiB });
    const r = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'snap',
      size: 8 * MiB,
      thin: true,
      share: 'nbd',
    });
    expect(r.share).toBe('nbd');
    expect(r.uri).toBe(`nbd://${engine.nbdEndpoint}/${r.uuid}?uuid=${r.uuid}`);
    await qemuIo(r.uri.split('?')[0], ['write -P 0x61 0 1M']);
    const s1 = await engine.client.createReplicaSnapshot({
      replicaUuid: r.uuid,
      snapshotUuid: randomUUID(),
      name: 'first',
    });
    expect(s1).toMatchObject({ replicaUuid: r.uuid, size: 8 * MiB, pool: 'snap', name: 'first' });
    expect(s1.allocated).toBeLessThan(s1.size); // reflinked or a sparse copy, never a dense one
    await qemuIo(r.uri.split('?')[0], ['write -P 0x62 0 1M']);
    expect(
      await code(engine.client.createReplicaSnapshot({ replicaUuid: r.uuid, snapshotUuid: s1.uuid })),
    ).toMatch(/^ALREADY_EXISTS: snapshot/);
    expect(
      await code(
        engine.client.createReplicaSnapshot({ replicaUuid: randomUUID(), snapshotUuid: randomUUID() }),
      ),
    ).toMatch(/^NOT_FOUND: replica/);
    expect((await engine.client.listReplicaSnapshots(r.uuid)).map((s) => s.uuid)).toEqual([s1.uuid]);

    const clone = await engine.client.createSnapshotClone({ snapshotUuid: s1.uuid, cloneUuid: randomUUID() });
    expect(clone).toMatchObject({ snapshotSource: s1.uuid, size: 8 * MiB, thin: true, pool: 'snap' });
    const shared = await engine.client.shareReplica(clone.uuid);
    await qemuIo(shared.uri.split('?')[0], ['read -P 0x61 0 1M']); // the snapshot's content, not the later write
    expect(
      await code(engine.client.createSnapshotClone({ snapshotUuid: randomUUID(), cloneUuid: randomUUID() })),
    ).toMatch(/^NOT_FOUND: snapshot/);
    expect(await code(engine.client.destroyPool('snap'))).toMatch(/^FAILED_PRECONDITION/);

    await engine.client.destroyReplicaSnapshot(s1.uuid);
    expect(await engine.client.listReplicaSnapshots()).toEqual([]);
    expect(await code(engine.client.destroyReplicaSnapshot(s1.uuid))).toMatch(/^NOT_FOUND: snapshot/);
    const unshared = await engine.client.unshareReplica(clone.uuid);
    expect(unshared.share).toBe('none');
    await engine.client.destroyReplica(clone.uuid);
    await engine.client.destroyReplica(r.uuid);
    await engine.client.destroyPool('snap');
  });

  it('runs a nexus: create, publish, I/O, child rules, shutdown, destroy, NexusInfo', async () => {
    await engine.client.createPool({ name: 'nx', capacity: 64 * MiB });
    const a = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'nx',
      size: 8 * MiB,
      thin: true,
    });
    const b = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'nx',
      size: 8 * MiB,
      thin: true,
    });
    const small = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'nx',
      size: 4 * MiB,
      thin: true,
    });
    const volume = randomUUID();
    const uuid = randomUUID();
    expect(await code(engine.client.createNexus({ uuid, size: 8 * MiB, children: [] }))).toMatch(
      /^INVALID_ARGUMENT/,
    );
    expect(await code(engine.client.createNexus({ uuid, size: 8 * MiB, children: [small.uri] }))).toMatch(
      /^INVALID_ARGUMENT: child .* has 4194304 bytes/,
    );
    expect(
      await code(engine.client.createNexus({ uuid, size: 8 * MiB, children: [`bdev:///${randomUUID()}`] })),
    ).toMatch(/^NOT_FOUND: replica/);
    expect(await code(engine.client.createNexus({ uuid, size: 8 * MiB, children: ['nvmf://x/y'] }))).toMatch(
      /^INVALID_ARGUMENT: .*unsupported scheme/,
    );
    expect(
      await code(
        engine.client.createNexus({ uuid, size: 8 * MiB, children: ['nbd://127.0.0.1:1/x?uuid=x'] }),
      ),
    ).toMatch(/^FAILED_PRECONDITION: cannot open child/);

    let n = await engine.client.createNexus({
      uuid,
      size: 8 * MiB,
      children: [a.uri, b.uri],
      volumeId: volume,
    });
    expect(n).toMatchObject({
      state: 'Online',
      share: 'none',
      deviceUri: '',
      volumeId: volume,
      nexusInfoKey: nexusInfoKey(space, uuid, volume),
    });
    expect(await code(engine.client.createNexus({ uuid, size: 8 * MiB, children: [a.uri] }))).toMatch(
      /^ALREADY_EXISTS: nexus/,
    );
    expect(await code(engine.client.destroyReplica(a.uuid))).toMatch(
      /^FAILED_PRECONDITION: replica .* is a child of nexus/,
    );
    expect(JSON.parse((await store.get(n.nexusInfoKey))!.value)).toEqual({
      children: [
        { healthy: true, uuid: a.uuid },
        { healthy: true, uuid: b.uuid },
      ],
      clean_shutdown: false,
    });

    n = await engine.client.publishNexus(uuid);
    expect(n.deviceUri).toBe(`nbd://${engine.nbdEndpoint}/${uuid}`);
    await qemuIo(n.deviceUri, ['write -P 0x77 0 2M', 'read -P 0x77 0 2M']);

    n = await engine.client.unpublishNexus(uuid);
    expect(n).toMatchObject({ share: 'none', deviceUri: '' });
    await expect(qemuIo(`nbd://${engine.nbdEndpoint}/${uuid}`, ['read 0 4k'])).rejects.toThrow();
    n = await engine.client.publishNexus(uuid);
    await qemuIo(n.deviceUri, ['read -P 0x77 0 2M']);

    n = await engine.client.removeChildNexus(uuid, b.uri);
    expect(n.children.map((c) => c.uuid)).toEqual([a.uuid]);
    expect(await code(engine.client.removeChildNexus(uuid, a.uri))).toMatch(
      /^FAILED_PRECONDITION: child .* is the last healthy child/,
    );
    expect(await code(engine.client.faultNexusChild(uuid, a.uri))).toMatch(/^FAILED_PRECONDITION/);
    n = await engine.client.addChildNexus(uuid, b.uri);
    expect(await code(engine.client.addChildNexus(uuid, b.uri))).toMatch(/^ALREADY_EXISTS: child/);
    n = await waitFor(
      async () => {
        const x = await engine.client.getNexus(uuid);
        return x.state === 'Online' ? x : null;
      },
      { what: 'rebuild of b' },
    );
    expect(n.children.every((c) => c.rebuildProgress === 100)).toBe(true);
    const fa = await readFile(join(engine.poolDir, 'nx', 'replicas', `${a.uuid}.img`));
    const fb = await readFile(join(engine.poolDir, 'nx', 'replicas', `${b.uuid}.img`));
    expect(fa.equals(fb)).toBe(true);

    n = await engine.client.faultNexusChild(uuid, b.uuid);
    expect(n.state).toBe('Degraded');
    expect(n.children.find((c) => c.uuid === b.uuid)?.state).toBe('Faulted');
    expect(JSON.parse((await store.get(n.nexusInfoKey))!.value).children).toEqual([
      { healthy: true, uuid: a.uuid },
      { healthy: false, uuid: b.uuid },
    ]);

    n = await engine.client.shutdownNexus(uuid);
    expect(n).toMatchObject({ state: 'Shutdown', deviceUri: '' });
    expect(JSON.parse((await store.get(n.nexusInfoKey))!.value).clean_shutdown).toBe(true);
    expect(await code(engine.client.publishNexus(uuid))).toMatch(
      /^FAILED_PRECONDITION: nexus .* is shut down/,
    );
    await engine.client.destroyNexus(uuid);
    expect(await code(engine.client.getNexus(uuid))).toMatch(/^NOT_FOUND: nexus/);

    // NexusInfo of the volume decides the children of the next nexus: b was unhealthy.
    const again = await engine.client.createNexus({
      uuid: randomUUID(),
      size: 8 * MiB,
      children: [a.uri, b.uri],
      volumeId: volume,
    });
    expect(again.children.map((c) => c.uuid)).toEqual([a.uuid]);
    await engine.client.destroyNexus(again.uuid);
  });

  it('starts empty after a restart; pools are imported and shares come back', async () => {
    await engine.client.createPool({ name: 'keep', capacity: 32 * MiB });
    const r = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'keep',
      size: 4 * MiB,
      thin: true,
      share: 'nbd',
    });
    await qemuIo(r.uri.split('?')[0], ['write -P 0x42 0 64k']);
    const liveKey = `/openebs.io/mayastor/apis/v0/clusters/${CLUSTER_ID}/namespaces/default/storctl/NodeLiveness/node-a`;
    await engine.stop('SIGTERM');
    expect(await engine.proc.wait()).toBe(0);
    expect(await store.get(liveKey)).toBeNull(); // revoked on clean stop

    engine = await startEngine(dir, 'node-a', { heartbeatTtl: 2 });
    expect(await engine.client.listPools()).toEqual([]);
    expect(await engine.client.listNexuses()).toEqual([]);
    expect(await store.get(liveKey)).not.toBeNull();
    const imported = await engine.client.importPool({ name: 'keep' });
    expect(imported.replicaCount).toBe(1);
    const back = await engine.client.getReplica(r.uuid);
    expect(back.share).toBe('nbd');
    await qemuIo(back.uri.split('?')[0], ['read -P 0x42 0 64k']);
    expect(await code(engine.client.importPool({ name: 'keep' }))).toMatch(/^ALREADY_EXISTS/);
    // CreatePool on a directory that already holds the pool imports it.
    await engine.client.exportPool('keep');
    const recreated = await engine.client.createPool({ name: 'keep', capacity: 32 * MiB });
    expect(recreated.replicaCount).toBe(1);
    // A pool whose replica file vanished is not imported half-way.
    await engine.client.exportPool('keep');
    await rm(join(engine.poolDir, 'keep', 'replicas', `${r.uuid}.img`));
    expect(await code(engine.client.importPool({ name: 'keep' }))).toMatch(
      /^FAILED_PRECONDITION: pool 'keep' cannot be imported: replica file/,
    );
    expect(await engine.client.listPools()).toEqual([]);
  });

  it('liveness key expires when the io-engine dies', async () => {
    const liveKey = `/openebs.io/mayastor/apis/v0/clusters/${CLUSTER_ID}/namespaces/default/storctl/NodeLiveness/node-a`;
    await engine.stop('SIGKILL');
    await waitFor(async () => (await store.get(liveKey)) === null, {
      what: 'liveness key expiry',
      timeoutMs: 15_000,
    });
  });

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
