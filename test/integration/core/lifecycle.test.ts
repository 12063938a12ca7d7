import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestError } from '../../../src/lib/rest/errors.js';
import { checkedFetch } from '../../helpers/openapi-validate.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

const rawFetch = async (url: string, method: string, payload?: string) => {
  const res = await checkedFetch(url, {
    method,
    body: payload,
    headers: payload ? { 'content-type': 'application/json' } : {},
  });
  const body = (res.body ?? null) as { kind: string; message: string; details: string };
  return { status: res.status, body };
};

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core volume lifecycle through REST (${backend} store)`, () => {
    let cluster: TestCluster;
    beforeAll(async () => {
      cluster = await TestCluster.start({ backend });
    }, 90_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('creates a 3-replica volume spread over the nodes, publishes it over NBD and serves data', async () => {
      const id = newVolumeId();
      const created = await cluster.rest.createVolume(id, {
        size: 64 * MiB,
        replicas: 3,
        thin: false,
        policy: { self_heal: true },
      });
      expect(created.spec.status).toBe('Created');
      const nodes = Object.values(created.state.replica_topology).map((r) => r.node);
      expect(new Set(nodes).size).toBe(3);
      // The volume's usage sums up its replicas' (REST VolumeUsage).
      const perReplica = Object.values(created.state.replica_topology).map((r) => r.usage?.allocated ?? 0);
      expect(created.state.usage).toMatchObject({
        capacity: 64 * MiB,
        allocated_replica: Math.max(...perReplica),
        total_allocated_replicas: perReplica.reduce((a, b) => a + b, 0),
      });

      const published = await cluster.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
      const uri = published.state.target!.deviceUri;
      expect(uri).toMatch(/^nbd:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]{36}$/);
      expect(published.state.target!.children).toHaveLength(3);
      expect(published.state.status).toBe('Online');

      await qemuIo(uri, 'write -P 0x5a 0 4M', 'write -P 0xc3 32M 1M');
      const read = await qemuIo(uri, 'read -P 0x5a 0 4M', 'read -P 0xc3 32M 1M');
      expect(read).toContain('read 1048576/1048576');

      // Publishing twice is refused with Mayastor's kind and status.
      const again = await cluster.rest
        .publishVolume(id, { protocol: 'nbd', publish_context: {} })
        .catch((e) => e);
      expect(again).toBeInstanceOf(RestError);
      expect(again.kind).toBe('AlreadyPublished');
      expect(again.status).toBe(412);

      // Unpublish, publish again on another node: the data is still there (served by the replicas).
      const target = published.spec.target!.node;
      await cluster.rest.unpublishVolume(id);
      const other = cluster.engines.map((e) => e.node).find((n) => n !== target)!;
      const moved = await cluster.rest.publishVolume(id, {
        protocol: 'nbd',
        publish_context: {},
        node: other,
      });
      expect(moved.spec.target!.node).toBe(other);
      await qemuIo(moved.state.target!.deviceUri, 'read -P 0x5a 0 4M', 'read -P 0xc3 32M 1M');

      await cluster.rest.unpublishVolume(id);
      await cluster.rest.deleteVolume(id);
      const specs = await cluster.rest.call<{ volumes: unknown[]; replicas: unknown[]; nexuses: unknown[] }>(
        'GET',
        '/specs',
      );
      expect(specs.volumes).toEqual([]);
      expect(specs.replicas).toEqual([]);
      expect(specs.nexuses).toEqual([]);
      const missing = await cluster.rest.getVolume(id).catch((e) => e);
      expect(missing.kind).toBe('NotFound');
      expect(missing.status).toBe(404);
    });

    it('answers bad requests with {details, message, kind} and the status of docs/mayastor-compat.md §2.3', async () => {
      const base = `${cluster.restUrl}/v0`;
      const id = newVolumeId();
      const noSize = await rawFetch(
        `${base}/volumes/${id}`,
        'PUT',
        JSON.stringify({ replicas: 1, thin: false, policy: { self_heal: true } }),
      );
      expect(noSize.status).toBe(400);
      expect(noSize.body).toMatchObject({ kind: 'InvalidArgument' });
      expect(noSize.body.message).toContain("'size'");
      expect(typeof noSize.body.details).toBe('string');

      const badJson = await rawFetch(`${base}/volumes/${id}`, 'PUT', '{"size":');
      expect(badJson.status).toBe(400);
      expect(badJson.body.kind).toBe('Deserialize');

      const badId = await rawFetch(`${base}/volumes/not-a-uuid`, 'GET');
      expect(badId.status).toBe(400);
      expect(badId.body.message).toContain('volume_id');

      const tooMany = await rawFetch(
        `${base}/volumes/${id}`,
        'PUT',
        JSON.stringify({ size: MiB, replicas: 4, thin: false, policy: { self_heal: true } }),
      );
      expect(tooMany.status).toBe(507);
      expect(tooMany.body.kind).toBe('ResourceExhausted');
      expect(tooMany.body.message).toMatch(/need 4 on distinct nodes, found 3/);

      const nvmf = await rawFetch(
        `${base}/volumes/${id}/target`,
        'PUT',
        JSON.stringify({ protocol: 'nvmf', publish_context: {} }),
      );
      expect(nvmf.status).toBe(400);
      expect(nvmf.body.message).toContain('protocol');

      const notFound = await rawFetch(
        `${base}/volumes/${id}/target`,
        'PUT',
        JSON.stringify({ protocol: 'nbd', publish_context: {} }),
      );
      expect(notFound.status).toBe(404);
      expect(notFound.body.kind).toBe('NotFound');

      await cluster.rest.createVolume(id, {
        size: MiB,
        replicas: 1,
        thin: true,
        policy: { self_heal: true },
      });
      // The same create again converges on the volume (a retry); a different one is refused.
      const same = await rawFetch(
        `${base}/volumes/${id}`,
        'PUT',
        JSON.stringify({ size: MiB, replicas: 1, thin: true, policy: { self_heal: true } }),
      );
      expect(same.status).toBe(200);
      const dup = await rawFetch(
        `${base}/volumes/${id}`,
        'PUT',
        JSON.stringify({ size: 2 * MiB, replicas: 1, thin: true, policy: { self_heal: true } }),
      );
      expect(dup.status).toBe(422);
      expect(dup.body.kind).toBe('AlreadyExists');

      const notPublished = await rawFetch(`${base}/volumes/${id}/target`, 'DELETE');
      expect(notPublished.status).toBe(412);
      expect(notPublished.body.kind).toBe('NotPublished');

      const poolInUse = await rawFetch(
        `${base}/pools/${(await cluster.rest.listReplicas()).find((r) => r.owner === id)!.pool}`,
        'DELETE',
      );
      expect(poolInUse.status).toBe(409);
      expect(poolInUse.body.kind).toBe('InUse');
      await cluster.rest.deleteVolume(id);
    });

    it('snapshots a volume and clones it: the clone serves the snapshot content; resize grows an unpublished volume', async () => {
      const id = newVolumeId();
      await cluster.rest.createVolume(id, {
        size: 16 * MiB,
        replicas: 2,
        thin: true,
        policy: { self_heal: true },
      });
      const v = await cluster.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
      await qemuIo(v.state.target!.deviceUri, 'write -P 0x7e 0 2M');
      const snapId = newVolumeId();
      const snap = await cluster.rest.createSnapshot(id, snapId);
      expect(snap.definition.metadata.status).toBe('Created');
      // It holds what its replicas held (2 MiB written of 16), not the volume's size.
      const held = (x: typeof snap) => x.state.replica_snapshots.map((r) => r.online?.allocated_size ?? -1);
      expect(held(snap)).toHaveLength(2);
      for (const bytes of held(snap)) {
        expect(bytes).toBeGreaterThanOrEqual(2 * MiB);
        expect(bytes).toBeLessThan(4 * MiB);
      }
      expect(snap.state.allocated_size).toBe(Math.max(...held(snap)));
      expect(snap.definition.metadata.total_allocated_size).toBe(snap.state.allocated_size);
      // Writes after the snapshot do not reach the clone.
      await qemuIo(v.state.target!.deviceUri, 'write -P 0x01 0 1M');
      // A later snapshot counts the earlier one as its predecessor.
      const laterId = newVolumeId();
      const later = await cluster.rest.createSnapshot(id, laterId);
      for (const { online } of later.state.replica_snapshots) {
        if (!online) throw new Error('a replica snapshot is offline');
        const first = snap.state.replica_snapshots.find((f) => f.online?.source_id === online.source_id);
        expect(online.predecessor_alloc_size).toBe(first?.online?.allocated_size);
      }
      expect(later.definition.metadata.total_allocated_size).toBe(
        Math.max(
          ...later.state.replica_snapshots.map(
            ({ online }) => (online?.allocated_size ?? 0) + (online?.predecessor_alloc_size ?? 0),
          ),
        ),
      );
      await cluster.rest.deleteSnapshot(laterId);
      const listed = await cluster.rest.call<{ entries: { definition: { spec: { uuid: string } } }[] }>(
        'GET',
        '/volumes/snapshots',
        undefined,
        { max_entries: 0 },
      );
      expect(listed.entries.map((e) => e.definition.spec.uuid)).toContain(snapId);

      const cloneId = newVolumeId();
      const wrongSize = await cluster.rest
        .call<never>('PUT', `/snapshots/${snapId}/volumes/${cloneId}`, {
          size: MiB,
          replicas: 1,
          thin: true,
          policy: { self_heal: true },
        })
        .catch((e: RestError) => e);
      expect(wrongSize.status).toBe(416);
      await cluster.rest.call('PUT', `/snapshots/${snapId}/volumes/${cloneId}`, {
        size: 16 * MiB,
        replicas: 2,
        thin: true,
        policy: { self_heal: true },
      });
      const clone = await cluster.rest.publishVolume(cloneId, { protocol: 'nbd', publish_context: {} });
      await qemuIo(clone.state.target!.deviceUri, 'read -P 0x7e 0 2M');

      await cluster.rest.unpublishVolume(cloneId);
      await cluster.rest.deleteVolume(cloneId);
      await cluster.rest.deleteSnapshot(snapId);

      // A published volume grows online (resize-online.test.ts covers it in depth).
      expect((await cluster.rest.resizeVolume(id, 24 * MiB)).spec.size).toBe(24 * MiB);
      await cluster.rest.unpublishVolume(id);
      const shrink = await cluster.rest.resizeVolume(id, 8 * MiB).catch((e: RestError) => e);
      expect((shrink as RestError).status).toBe(406);
      expect((await cluster.rest.resizeVolume(id, 32 * MiB)).spec.size).toBe(32 * MiB);
      const again = await cluster.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
      expect(again.state.target!.size).toBe(32 * MiB);
      await qemuIo(
        again.state.target!.deviceUri,
        'read -P 0x01 0 1M',
        'read -P 0x7e 1M 1M',
        'write -P 0x33 30M 1M',
      );
      await cluster.rest.unpublishVolume(id);
      await cluster.rest.deleteVolume(id);
    });

    it('lists volumes with pagination', async () => {
      const ids = [newVolumeId(), newVolumeId(), newVolumeId()];
      for (const id of ids)
        await cluster.rest.createVolume(id, {
          size: MiB,
          replicas: 1,
          thin: true,
          policy: { self_heal: false },
        });
      const p1 = await cluster.rest.call<{ entries: { spec: { uuid: string } }[]; next_token?: number }>(
        'GET',
        '/volumes',
        undefined,
        { max_entries: 2 },
      );
      expect(p1.entries).toHaveLength(2);
      expect(p1.next_token).toBe(2);
      const p2 = await cluster.rest.call<{ entries: unknown[]; next_token?: number }>(
        'GET',
        '/volumes',
        undefined,
        { max_entries: 2, starting_token: 2 },
      );
      expect(p2.entries).toHaveLength(1);
      expect(p2.next_token).toBeUndefined();
      const filtered = await cluster.rest.call<{ entries: unknown[] }>('GET', '/volumes', undefined, {
        max_entries: 0,
        volume_id: newVolumeId(),
      });
      expect(filtered.entries).toEqual([]);
      for (const id of ids) await cluster.rest.deleteVolume(id);
    });

    it('rolls a failed publish back: no nexus is left and the volume stays unpublished', async () => {
      const id = newVolumeId();
      const v = await cluster.rest.createVolume(id, {
        size: 16 * MiB,
        replicas: 2,
        thin: true,
        policy: { self_heal: false },
      });
      const nodes = Object.values(v.state.replica_topology).map((r) => r.node!);
      const elsewhere = cluster.engines.map((e) => e.node).find((n) => !nodes.includes(n))!;
      // Freeze both replicas' io-engines: they still look alive (their liveness leases have not
      // expired) but cannot share their replicas, so a nexus on the third node has no child.
      const frozen = nodes.map((n) => cluster.engine(n));
      for (const f of frozen) f.proc.child.kill('SIGSTOP');
      try {
        const err = await cluster.rest
          .call<never>('PUT', `/volumes/${id}/target`, {
            protocol: 'nbd',
            publish_context: {},
            node: elsewhere,
          })
          .catch((e: RestError) => e);
        expect(err).toBeInstanceOf(RestError);
        expect(err.message).toMatch(/the nexus was destroyed again/);
      } finally {
        for (const f of frozen) f.proc.child.kill('SIGCONT');
      }
      const after = await cluster.rest.getVolume(id);
      expect(after.spec.target).toBeUndefined();
      expect(after.spec.operation).toBeUndefined();
      const nexuses = await cluster.rest.call<unknown[]>('GET', '/nexuses');
      expect(nexuses).toEqual([]);
      // Once the node answers again, publish works.
      await waitFor(
        async () =>
          (await cluster.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} }).catch(() => null))
            ?.state.target,
        {
          what: 'publish after the node recovered',
        },
      );
      await cluster.rest.unpublishVolume(id);
      await cluster.rest.deleteVolume(id);
    });
  });
}
