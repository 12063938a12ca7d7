import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { checkedFetch } from '../../helpers/openapi-validate.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

interface Replica {
  uuid: string;
  node: string;
  pool: string;
  size: number;
  thin: boolean;
  share: string;
  uri: string;
  state: string;
}
interface Child {
  uri: string;
  state: string;
  rebuildProgress?: number;
}
interface Nexus {
  uuid: string;
  node: string;
  size: number;
  state: string;
  children: Child[];
  deviceUri: string;
}

/** One request as a client sees it: status and parsed body (error bodies are `{details, message, kind}`). */
async function req(base: string, method: string, path: string, body?: unknown) {
  const res = await checkedFetch(`${base}/v0${path}`, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  });
  // biome-ignore lint/suspicious/noExplicitAny: the tests read fields of whatever came back
  return { status: res.status, body: res.body as any };
}

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core replica and nexus endpoints (${backend} store)`, () => {
    let cluster: TestCluster;
    let call: (method: string, path: string, body?: unknown) => ReturnType<typeof req>;
    const survivors: { replicas: string[]; nexus?: string } = { replicas: [] };

    beforeAll(async () => {
      cluster = await TestCluster.start({ backend });
      call = (method, path, body) => req(cluster.restUrl, method, path, body);
    }, 90_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('creates, shares, unshares and deletes an unmanaged replica, with data through its share', async () => {
      const id = newVolumeId();
      const created = await call('PUT', `/pools/pool-node-1/replicas/${id}`, { size: 16 * MiB, thin: false });
      expect(created.status).toBe(200);
      const r = created.body as Replica;
      expect(r).toMatchObject({ uuid: id, node: 'node-1', pool: 'pool-node-1', size: 16 * MiB, thin: false });
      expect(r.share).toBe('none');

      const byNode = await call('GET', `/nodes/node-1/pools/pool-node-1/replicas/${id}`);
      expect(byNode.status).toBe(200);
      expect(byNode.body.uuid).toBe(id);
      const wrongNode = await call('GET', `/nodes/node-2/pools/pool-node-1/replicas/${id}`);
      expect(wrongNode.status).toBe(404);
      expect(wrongNode.body.kind).toBe('NotFound');

      // The same create again returns the replica (a retry converges); another size is refused.
      const same = await call('PUT', `/pools/pool-node-1/replicas/${id}`, { size: 16 * MiB, thin: false });
      expect(same.status).toBe(200);
      expect(same.body.uuid).toBe(id);
      const again = await call('PUT', `/pools/pool-node-1/replicas/${id}`, { size: 32 * MiB, thin: false });
      expect(again.status).toBe(422);
      expect(again.body.kind).toBe('AlreadyExists');

      const uri = await call('PUT', `/pools/pool-node-1/replicas/${id}/share/nbd`);
      expect(uri.status).toBe(200);
      expect(uri.body).toMatch(/^nbd:\/\/127\.0\.0\.1:\d+\//);
      await qemuIo(uri.body.split('?')[0], 'write -P 0x3c 0 1M');
      await qemuIo(uri.body.split('?')[0], 'read -P 0x3c 0 1M');
      expect((await call('GET', `/replicas/${id}`)).body.share).toBe('nbd');

      const twice = await call('PUT', `/pools/pool-node-1/replicas/${id}/share/nbd`);
      expect(twice.status).toBe(412);
      expect(twice.body.kind).toBe('AlreadyShared');
      const nvmf = await call('PUT', `/pools/pool-node-1/replicas/${id}/share/nvmf`);
      expect(nvmf.status).toBe(400);
      expect(nvmf.body.message).toMatch(/nvmf.*use nbd/);

      expect((await call('DELETE', `/pools/pool-node-1/replicas/${id}/share`)).status).toBe(204);
      const unshared = await call('DELETE', `/pools/pool-node-1/replicas/${id}/share`);
      expect(unshared.status).toBe(412);
      expect(unshared.body.kind).toBe('NotShared');

      // Node-scoped delete on the wrong node is NotFound; on the right one it destroys the replica.
      expect((await call('DELETE', `/nodes/node-2/pools/pool-node-1/replicas/${id}`)).status).toBe(404);
      expect((await call('DELETE', `/nodes/node-1/pools/pool-node-1/replicas/${id}`)).status).toBe(204);
      expect((await call('GET', `/replicas/${id}`)).status).toBe(404);
      const left = await call('GET', '/nodes/node-1/pools/pool-node-1/replicas');
      expect(left.body.map((x: Replica) => x.uuid)).not.toContain(id);
      expect((await call('DELETE', `/pools/pool-node-1/replicas/${id}`)).status).toBe(404);
    });

    it('validates replica requests at the boundary', async () => {
      const id = newVolumeId();
      const noSize = await call('PUT', `/pools/pool-node-1/replicas/${id}`, { thin: false });
      expect(noSize.status).toBe(400);
      expect(noSize.body.kind).toBe('InvalidArgument');
      expect(noSize.body.message).toContain("'size'");
      const nvmf = await call('PUT', `/pools/pool-node-1/replicas/${id}`, {
        size: MiB,
        thin: true,
        share: 'nvmf',
      });
      expect(nvmf.status).toBe(400);
      expect(nvmf.body.message).toMatch(/'share'.*use nbd/);
      const badId = await call('PUT', '/pools/pool-node-1/replicas/not-a-uuid', { size: MiB, thin: true });
      expect(badId.status).toBe(400);
      expect(badId.body.message).toContain('replica_id');
      const noPool = await call('PUT', `/pools/no-such-pool/replicas/${id}`, { size: MiB, thin: true });
      expect(noPool.status).toBe(404);
      const otherNode = await call('PUT', `/nodes/node-2/pools/pool-node-1/replicas/${id}`, {
        size: MiB,
        thin: true,
      });
      expect(otherNode.status).toBe(404);
      const tooBig = await call('PUT', `/pools/pool-node-1/replicas/${id}`, {
        size: 4 * 1024 ** 3,
        thin: false,
      });
      expect(tooBig.status).toBe(507);
      expect(tooBig.body.kind).toBe('ResourceExhausted');
      // A failed create leaves no spec behind.
      expect((await call('GET', `/replicas/${id}`)).status).toBe(404);
    });

    it('refuses to delete a volume replica (InUse 409) and to destroy a volume target nexus', async () => {
      const vol = newVolumeId();
      await cluster.rest.createVolume(vol, {
        size: 8 * MiB,
        replicas: 1,
        thin: true,
        policy: { self_heal: true },
      });
      const published = await cluster.rest.publishVolume(vol, { protocol: 'nbd', publish_context: {} });
      const [rid, topo] = Object.entries(published.state.replica_topology)[0];
      const del = await call('DELETE', `/pools/${topo.pool}/replicas/${rid}`);
      expect(del.status).toBe(409);
      expect(del.body.kind).toBe('InUse');
      expect(del.body.message).toContain(vol);

      const target = published.state.target!;
      const nx = await call('DELETE', `/nexuses/${target.uuid}`);
      expect(nx.status).toBe(409);
      expect(nx.body.kind).toBe('InUse');
      expect(nx.body.message).toMatch(/unpublish/);
      const child = await call(
        'DELETE',
        `/nexuses/${target.uuid}/children/${encodeURIComponent(target.children[0].uri)}`,
      );
      expect(child.status).toBe(409);
      const still = await cluster.rest.getVolume(vol);
      expect(still.state.status).toBe('Online');
      await qemuIo(still.state.target!.deviceUri, 'write -P 0x11 0 64k', 'read -P 0x11 0 64k');

      await cluster.rest.unpublishVolume(vol);
      await cluster.rest.deleteVolume(vol);
    });

    it('builds an operator nexus from a local and a remote replica, shares it and changes its children', async () => {
      const [r1, r2, nx] = [newVolumeId(), newVolumeId(), newVolumeId()];
      expect(
        (await call('PUT', `/pools/pool-node-1/replicas/${r1}`, { size: 16 * MiB, thin: false })).status,
      ).toBe(200);
      const remote = await call('PUT', `/nodes/node-2/pools/pool-node-2/replicas/${r2}`, {
        size: 16 * MiB,
        thin: true,
        share: 'nbd',
      });
      expect(remote.status).toBe(200);
      expect(remote.body.share).toBe('nbd');
      const remoteUri = (remote.body as Replica).uri;
      expect(remoteUri).toMatch(/^nbd:\/\//);
      const localUri = `bdev:///${r1}?uuid=${r1}`;

      const created = await call('PUT', `/nodes/node-1/nexuses/${nx}`, {
        children: [localUri, remoteUri],
        size: 8 * MiB,
      });
      expect(created.status).toBe(200);
      const n = created.body as Nexus;
      expect(n).toMatchObject({ uuid: nx, node: 'node-1', size: 8 * MiB });
      expect(n.children.map((c) => c.uri).sort()).toEqual([localUri, remoteUri].sort());
      expect((await call('GET', `/nodes/node-1/nexuses/${nx}`)).body.uuid).toBe(nx);
      expect((await call('GET', `/nodes/node-2/nexuses/${nx}`)).status).toBe(404);
      const dup = await call('PUT', `/nodes/node-1/nexuses/${nx}`, { children: [localUri], size: 8 * MiB });
      expect(dup.status).toBe(422);

      const children = await call('GET', `/nexuses/${nx}/children`);
      expect(children.body).toHaveLength(2);
      const one = await call('GET', `/nexuses/${nx}/children/${encodeURIComponent(remoteUri)}`);
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ uri: remoteUri, state: 'Online' });
      expect(
        (await call('GET', `/nexuses/${nx}/children/${encodeURIComponent('bdev:///nope?uuid=nope')}`)).status,
      ).toBe(404);

      // The replicas are in use: neither can be deleted, nor the remote one unshared.
      expect((await call('DELETE', `/pools/pool-node-1/replicas/${r1}`)).body.kind).toBe('InUse');
      expect((await call('DELETE', `/pools/pool-node-2/replicas/${r2}/share`)).body.kind).toBe('InUse');

      const share = await call('PUT', `/nodes/node-1/nexuses/${nx}/share/nbd`);
      expect(share.status).toBe(200);
      expect(share.body).toMatch(new RegExp(`^nbd://127\\.0\\.0\\.1:\\d+/${nx}$`));
      expect((await call('PUT', `/nodes/node-1/nexuses/${nx}/share/nbd`)).body.kind).toBe('AlreadyShared');
      const iscsi = await call('PUT', `/nodes/node-1/nexuses/${nx}/share/iscsi`);
      expect(iscsi.status).toBe(400);
      expect(iscsi.body.message).toMatch(/iscsi.*use nbd/);
      await qemuIo(share.body, 'write -P 0xa7 0 2M');

      // Remove the remote child, write more, add it back: it is rebuilt and holds both writes.
      expect((await call('DELETE', `/nexuses/${nx}/children/${encodeURIComponent(remoteUri)}`)).status).toBe(
        204,
      );
      expect((await call('GET', `/nexuses/${nx}/children`)).body).toHaveLength(1);
      await qemuIo(share.body, 'write -P 0xb8 4M 1M');
      const added = await call('PUT', `/nexuses/${nx}/children/${encodeURIComponent(remoteUri)}`);
      expect(added.status).toBe(200);
      expect(added.body.uri).toBe(remoteUri);
      await waitFor(
        async () => {
          const c = (await call('GET', `/nodes/node-1/nexuses/${nx}/children`)).body as Child[];
          return c.length === 2 && c.every((x) => x.state === 'Online');
        },
        { what: 'the re-added child rebuilt and Online' },
      );
      expect((await call('PUT', `/nexuses/${nx}/children/${encodeURIComponent(remoteUri)}`)).body.kind).toBe(
        'AlreadyExists',
      );
      // Drop the local child: the nexus now serves from the rebuilt remote replica alone.
      expect(
        (await call('DELETE', `/nodes/node-1/nexuses/${nx}/children/${encodeURIComponent(localUri)}`)).status,
      ).toBe(204);
      await qemuIo(share.body, 'read -P 0xa7 0 2M', 'read -P 0xb8 4M 1M');
      const last = await call('DELETE', `/nexuses/${nx}/children/${encodeURIComponent(remoteUri)}`);
      expect(last.status).toBe(412);
      expect(last.body.kind).toBe('FailedPrecondition');
      const specs = await call('GET', '/specs');
      const spec = specs.body.nexuses.find((x: { uuid: string }) => x.uuid === nx);
      // REST NexusSpec: no owner, the status flattened, the children as their URIs
      expect(spec).toMatchObject({ managed: false, share: 'nbd', status: 'Created' });
      expect(spec.owner).toBeUndefined();
      expect(spec.children).toEqual([remoteUri]);

      // Left in place for the GC check at the end: an operator's nexus and replicas are not collected.
      survivors.replicas.push(r1, r2);
      survivors.nexus = nx;
    });

    it('validates nexus requests and rolls back a nexus the io-engine cannot build', async () => {
      const nx = newVolumeId();
      const badChild = await call('PUT', `/nodes/node-1/nexuses/${nx}`, {
        children: ['iscsi://h/x'],
        size: MiB,
      });
      expect(badChild.status).toBe(400);
      expect(badChild.body.message).toContain('children[0]');
      const noSize = await call('PUT', `/nodes/node-1/nexuses/${nx}`, { children: ['bdev:///x'] });
      expect(noSize.status).toBe(400);
      expect(noSize.body.message).toContain("'size'");
      const none = await call('PUT', `/nodes/node-1/nexuses/${nx}`, { children: [], size: MiB });
      expect(none.status).toBe(400);
      const missing = newVolumeId();
      const failed = await call('PUT', `/nodes/node-1/nexuses/${nx}`, {
        children: [`bdev:///${missing}?uuid=${missing}`],
        size: MiB,
      });
      expect(failed.status).toBe(404);
      expect(failed.body.message).toContain(missing);
      expect((await call('GET', `/nodes/node-1/nexuses/${nx}`)).status).toBe(404);
      expect((await call('DELETE', `/nexuses/${nx}`)).status).toBe(404);
      // A node no io-engine ever registered as does not exist: 404, not 503 (offline).
      expect(
        (await call('PUT', `/nodes/node-9/nexuses/${nx}`, { children: ['bdev:///x'], size: MiB })).status,
      ).toBe(404);
    });

    it('keeps operator replicas and nexuses through garbage collection, then deletes them on request', async () => {
      const nx = survivors.nexus!;
      // Witness of full GC passes past the grace period: a replica and a nexus made on an io-engine
      // behind core's back (no spec) are said once each and left alone (they may be a volume's data
      // and target a store restored from an older dump no longer knows); the operator's unmanaged
      // ones survive the same passes.
      const engine = new IoEngineClient(cluster.engine('node-3').grpc);
      const [strayReplica, strayNexus] = [newVolumeId(), newVolumeId()];
      try {
        await engine.createReplica({ uuid: strayReplica, pool: 'pool-node-3', size: MiB, thin: true });
        await engine.createNexus({
          uuid: strayNexus,
          size: MiB,
          children: [`bdev:///${strayReplica}?uuid=${strayReplica}`],
        });
        const orphaned = await waitFor(
          async () => {
            const said = (await cluster.events()).filter((e) => e.includes('"Orphaned"'));
            return [strayReplica, strayNexus].every((id) => said.some((e) => e.includes(id))) ? said : null;
          },
          { what: 'an Orphaned event for the spec-less nexus and replica', timeoutMs: 30_000 },
        );
        expect(orphaned.filter((e) => e.includes(strayReplica))).toHaveLength(1);
        expect(JSON.parse(orphaned.find((e) => e.includes(strayReplica))!).message).toMatch(
          /^replica on node node-3 that no spec names: left as it is .*`storctl orphans --delete` removes it$/,
        );
        expect((await engine.listReplicas()).some((x) => x.uuid === strayReplica)).toBe(true);
        expect((await engine.listNexuses()).some((x) => x.uuid === strayNexus)).toBe(true);
        await engine.destroyNexus(strayNexus);
        await engine.destroyReplica(strayReplica);
      } finally {
        engine.close();
      }
      const n = await call('GET', `/nexuses/${nx}`);
      expect(n.status).toBe(200);
      expect(n.body.state).toBe('Online');
      for (const r of survivors.replicas) expect((await call('GET', `/replicas/${r}`)).status).toBe(200);

      expect((await call('DELETE', `/nodes/node-1/nexuses/${nx}/share`)).status).toBe(204);
      expect((await call('DELETE', `/nodes/node-1/nexuses/${nx}/share`)).body.kind).toBe('NotShared');
      expect((await call('DELETE', `/nodes/node-2/nexuses/${nx}`)).status).toBe(404);
      expect((await call('DELETE', `/nodes/node-1/nexuses/${nx}`)).status).toBe(204);
      expect((await call('GET', `/nexuses/${nx}`)).status).toBe(404);
      const [r1, r2] = survivors.replicas;
      expect((await call('DELETE', `/pools/pool-node-1/replicas/${r1}`)).status).toBe(204);
      expect((await call('DELETE', `/nodes/node-2/pools/pool-node-2/replicas/${r2}`)).status).toBe(204);
      const specs = await call('GET', '/specs');
      expect(specs.body.replicas).toEqual([]);
      expect(specs.body.nexuses).toEqual([]);
    });
  });
}
