import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpcEngine } from '../../../src/daemons/core/engine-grpc.js';
import { RestError } from '../../../src/lib/rest/errors.js';
import type { Volume } from '../../../src/lib/rest/types.js';
import { volumeWatchConfig, watchConfig } from '../../../src/lib/specs/index.js';
import { objectKey, typePrefix } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { checkedFetch } from '../../helpers/openapi-validate.js';
import { runStorctl } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, coreFlags, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/** No garbage collection during these tests: stale targets must stay until shutdown_targets. */
const CORE_FLAGS = coreFlags({ '--gc-period': '1h' });

const fail = (p: Promise<unknown>) =>
  p.then(
    () => Promise.reject(new Error('expected an error')),
    (e) => e,
  );

/** A real HTTP server receiving watch callbacks (POSTs), recorded in order. */
async function callbackServer(answer = true): Promise<{
  url: string;
  hits: { path: string; body: { resource: string; type: string } }[];
  /** Requests left unanswered whose connection the sender closed (its timeout). */
  readonly dropped: number;
  close(): Promise<void>;
}> {
  const hits: { path: string; body: { resource: string; type: string } }[] = [];
  let dropped = 0;
  const server: Server = createServer((req: IncomingMessage, res) => {
    let data = '';
    req.on('data', (d) => {
      data += d;
    });
    req.on('end', () => {
      if (req.method === 'POST') hits.push({ path: req.url ?? '', body: JSON.parse(data) });
      if (answer) res.writeHead(204).end();
      // else: never answer (a hung receiver); core must not wait for it
      else
        res.on('close', () => {
          dropped++;
        });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    get dropped() {
      return dropped;
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core volume extras: property, share, shutdown_targets, rebuild-history, watches (${backend})`, () => {
    let c: TestCluster;
    beforeAll(async () => {
      c = await TestCluster.start({ backend, coreFlags: CORE_FLAGS });
    }, 90_000);
    afterAll(async () => {
      await c?.stop();
    });

    const create = (id: string, replicas: number) =>
      c.rest.createVolume(id, { size: 32 * MiB, replicas, thin: true, policy: { self_heal: false } });

    it('sets max_snapshots: stored in the VolumeSpec, snapshots beyond it refused with OutOfRange', async () => {
      const id = newVolumeId();
      await create(id, 1);
      const v = await c.rest.call<Volume>('PUT', `/volumes/${id}/property`, { max_snapshots: 1 });
      expect(v.spec.max_snapshots).toBe(1);
      const store = await openStore(c.storeUrl);
      try {
        const kv = await store.get(
          objectKey({ clusterId: c.clusterId, namespace: 'default' }, 'VolumeSpec', id),
        );
        expect(JSON.parse(kv!.value).max_snapshots).toBe(1);
      } finally {
        await store.close();
      }

      await c.rest.createSnapshot(id, newVolumeId());
      const over = await fail(c.rest.createSnapshot(id, newVolumeId()));
      expect(over).toBeInstanceOf(RestError);
      expect(over.kind).toBe('OutOfRange');
      expect(over.status).toBe(416);

      // Lower than the snapshots it has, malformed, missing, unknown volume: refused, named.
      const below = await fail(c.rest.call('PUT', `/volumes/${id}/property`, { max_snapshots: 0 }));
      expect([below.status, below.kind]).toEqual([400, 'InvalidArgument']);
      expect(below.message).toMatch(/already has 1 snapshot/);
      for (const body of [{ max_snapshots: -1 }, { max_snapshots: 'x' }, {}, { max_snapshots: 2 ** 32 }]) {
        const bad = await fail(c.rest.call('PUT', `/volumes/${id}/property`, body));
        expect([bad.status, bad.kind]).toEqual([400, 'InvalidArgument']);
        expect(bad.message).toMatch(/max_snapshots/);
      }
      const missing = await fail(
        c.rest.call('PUT', `/volumes/${newVolumeId()}/property`, { max_snapshots: 3 }),
      );
      expect(missing.status).toBe(404);

      // Raising it lets the next snapshot through.
      await c.rest.call('PUT', `/volumes/${id}/property`, { max_snapshots: 2 });
      await c.rest.createSnapshot(id, newVolumeId());
    });

    it('unshares a published volume (nexus kept, target gone) and shares it again over nbd', async () => {
      const id = newVolumeId();
      await create(id, 2);
      const notPublished = await fail(c.rest.call('PUT', `/volumes/${id}/share/nbd`));
      expect([notPublished.status, notPublished.kind]).toEqual([412, 'NotPublished']);

      const published = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
      const uri = published.state.target!.deviceUri;
      const nexus = published.spec.target!.node;
      await qemuIo(uri, 'write -P 0x6d 0 2M');

      const already = await fail(c.rest.call('PUT', `/volumes/${id}/share/nbd`));
      expect([already.status, already.kind]).toEqual([412, 'AlreadyShared']);

      await c.rest.call('DELETE', `/volumes/${id}/share`);
      const unshared = await c.rest.getVolume(id);
      expect(unshared.spec.target?.node).toBe(nexus);
      expect(unshared.spec.target?.protocol).toBeUndefined();
      expect(unshared.state.target?.deviceUri).toBe('');
      expect(unshared.state.target?.children).toHaveLength(2);
      await expect(qemuIo(uri, 'read -P 0x6d 0 2M')).rejects.toThrow();
      const notShared = await fail(c.rest.call('DELETE', `/volumes/${id}/share`));
      expect([notShared.status, notShared.kind]).toEqual([412, 'NotShared']);

      for (const p of ['nvmf', 'iscsi', 'carrier-pigeon']) {
        const bad = await fail(c.rest.call('PUT', `/volumes/${id}/share/${p}`));
        expect([bad.status, bad.kind]).toEqual([400, 'InvalidArgument']);
        expect(bad.message).toMatch(/nbd/);
      }
      const badHost = await fail(
        c.rest.call('PUT', `/volumes/${id}/share/nbd`, undefined, { frontend_host: 'a b' }),
      );
      expect(badHost.status).toBe(400);

      const again = await c.rest.call<string>('PUT', `/volumes/${id}/share/nbd`, undefined, {
        frontend_host: 'app-1',
      });
      expect(again).toBe(uri);
      const shared = await c.rest.getVolume(id);
      expect(shared.spec.target?.protocol).toBe('nbd');
      expect(shared.spec.target?.frontend_nodes?.[0]?.name).toBe('app-1');
      await qemuIo(uri, 'read -P 0x6d 0 2M');

      // The spec's misprinted path (`/volumes{id}/share`) unshares too.
      const res = await checkedFetch(`${c.restUrl}/v0/volumes${id}/share`, { method: 'DELETE' });
      expect(res.status).toBe(204);
      expect((await c.rest.getVolume(id)).state.target?.deviceUri).toBe('');
      await c.rest.unpublishVolume(id);
      await c.rest.deleteVolume(id);
    });

    it('records a completed rebuild in the rebuild history of the target', async () => {
      const id = newVolumeId();
      await create(id, 1);
      const notPublished = await fail(c.rest.call('GET', `/volumes/${id}/rebuild-history`));
      expect(notPublished.kind).toBe('NotPublished');
      const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
      await qemuIo(v.state.target!.deviceUri, 'write -P 0x42 0 16M');
      const empty = await c.rest.call<{ targetUuid: string; records: unknown[] }>(
        'GET',
        `/volumes/${id}/rebuild-history`,
      );
      expect(empty).toEqual({ targetUuid: await nexusOf(id), records: [] });

      const before = new Set(v.state.target!.children.map((ch) => ch.uri));
      await c.rest.scaleVolume(id, 2);
      const online = await waitFor(
        async () => {
          const vol = await c.rest.getVolume(id);
          return vol.state.status === 'Online' && vol.state.target?.children.length === 2 ? vol : null;
        },
        { what: 'the added replica rebuilt', timeoutMs: 30_000, intervalMs: 100 },
      );
      const added = online.state.target!.children.find((ch) => !before.has(ch.uri))!;
      const history = await c.rest.call<{
        targetUuid: string;
        records: Record<string, unknown>[];
      }>('GET', `/volumes/${id}/rebuild-history`);
      expect(history.targetUuid).toBe(await nexusOf(id));
      expect(history.records).toHaveLength(1);
      const r = history.records[0];
      expect(r).toMatchObject({
        childUri: added.uri,
        srcUri: [...before][0],
        rebuildJobState: 'Completed',
        blocksTotal: (32 * MiB) / 512,
        blocksRecovered: (32 * MiB) / 512,
        // The 16 MiB written; the empty half was zeroed on the child, not sent.
        blocksTransferred: (16 * MiB) / 512,
        blocksRemaining: 0,
        blockSize: 512,
        isPartial: false,
      });
      expect(Date.parse(String(r.endTime))).toBeGreaterThanOrEqual(Date.parse(String(r.startTime)));
      await qemuIo(online.state.target!.deviceUri, 'read -P 0x42 0 16M', 'read -P 0 16M 16M');
      // So the new thin replica holds the data alone: its empty half stays unallocated.
      const uuid = new URL(added.uri).searchParams.get('uuid')!;
      const node = online.state.replica_topology[uuid].node!;
      const engine = new GrpcEngine(node, c.engine(node).grpc, 10_000);
      try {
        const replica = (await engine.listReplicas()).find((r) => r.uuid === uuid)!;
        expect(replica.allocated).toBeGreaterThanOrEqual(16 * MiB);
        expect(replica.allocated).toBeLessThan(20 * MiB);
      } finally {
        engine.close();
      }
      await c.rest.unpublishVolume(id);
      await c.rest.deleteVolume(id);
    }, 60_000);

    /** The volume's current target nexus (REST VolumeState.target is that nexus). */
    const nexusOf = async (id: string) => (await c.rest.getVolume(id)).state.target?.uuid;

    it('shutdown_targets destroys the stale target a republish left on a node that was hung', async () => {
      const id = newVolumeId();
      const v = await create(id, 1);
      const replicaNode = Object.values(v.state.replica_topology)[0].node!;
      const [first, second] = c.engines.map((e) => e.node).filter((n) => n !== replicaNode);
      const p1 = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: first });
      const oldNexus = (await nexusOf(id))!;
      await qemuIo(p1.state.target!.deviceUri, 'write -P 0x7e 0 4M');

      // The target's node hangs: it goes offline, the volume is republished elsewhere (forced
      // teardown), and the old nexus survives on the hung node.
      const hung = c.engine(first);
      hung.proc.child.kill('SIGSTOP');
      try {
        await waitFor(async () => (await c.rest.getNode(first)).state.status === 'Offline', {
          what: `${first} offline`,
          timeoutMs: 15_000,
        });
        await c.rest.publishVolume(id, {
          protocol: 'nbd',
          publish_context: {},
          node: second,
          republish: true,
        });
      } finally {
        hung.proc.child.kill('SIGCONT');
      }
      await waitFor(async () => (await c.rest.getNode(first)).state.status === 'Online', {
        what: `${first} online again`,
      });
      const engine = new GrpcEngine(first, hung.grpc, 10_000);
      try {
        expect((await engine.listNexuses()).map((n) => n.uuid)).toContain(oldNexus);
        const before = await c.rest.call<{ nexuses: { uuid: string }[] }>('GET', '/specs');
        expect(before.nexuses.map((n) => n.uuid)).toContain(oldNexus);

        const res = await checkedFetch(`${c.restUrl}/v0/volumes/${id}/shutdown_targets`, {
          method: 'DELETE',
        });
        expect(res.status).toBe(204);
        expect((await engine.listNexuses()).map((n) => n.uuid)).not.toContain(oldNexus);
        const after = await c.rest.call<{ nexuses: { uuid: string }[] }>('GET', '/specs');
        expect(after.nexuses.map((n) => n.uuid)).toEqual([await nexusOf(id)]);
      } finally {
        engine.close();
      }
      // The current target is untouched and serves the data.
      const now = await c.rest.getVolume(id);
      expect(now.spec.target?.node).toBe(second);
      await qemuIo(now.state.target!.deviceUri, 'read -P 0x7e 0 4M');
      const unknown = await checkedFetch(`${c.restUrl}/v0/volumes/${newVolumeId()}/shutdown_targets`, {
        method: 'DELETE',
      });
      expect(unknown.status).toBe(404);
      await c.rest.unpublishVolume(id);
      await c.rest.deleteVolume(id);
    }, 60_000);

    it('operator commands: set-property, unshare, share, rebuild-history, shutdown-targets', async () => {
      const id = newVolumeId();
      await create(id, 2);
      const cli = (...args: string[]) => runStorctl(args, { env: c.env });
      const set = await cli('volume', 'set-property', id, '--max-snapshots', '1', '-o', 'json');
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse(set.stdout).spec.max_snapshots).toBe(1);
      await c.rest.createSnapshot(id, newVolumeId());
      const refused = await cli('volume', 'set-property', id, '--max-snapshots', '0');
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/already has 1 snapshot/);

      const notPublished = await cli('volume', 'share', id);
      expect(notPublished.code).not.toBe(0);
      expect(notPublished.stderr).toMatch(/NotPublished|not published/);
      const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
      const unshare = await cli('volume', 'unshare', id);
      expect(unshare.code, unshare.stderr).toBe(0);
      expect((await c.rest.getVolume(id)).state.target?.deviceUri).toBe('');
      const share = await cli('volume', 'share', id, '--frontend-host', 'app-1');
      expect(share.code, share.stderr).toBe(0);
      expect(share.stdout.trim()).toBe(v.state.target!.deviceUri);

      const history = await cli('volume', 'rebuild-history', id, '-o', 'json');
      expect(history.code, history.stderr).toBe(0);
      expect(JSON.parse(history.stdout)).toEqual([]);
      const stale = await cli('volume', 'shutdown-targets', id);
      expect(stale.code, stale.stderr).toBe(0);
      expect((await c.rest.getVolume(id)).state.target?.deviceUri).toBe(v.state.target!.deviceUri);
      await c.rest.unpublishVolume(id);
    }, 60_000);

    it('watches: callbacks stored durably, POSTed on spec changes, never blocking operations', async () => {
      const id = newVolumeId();
      await create(id, 1);
      const receiver = await callbackServer();
      const hung = await callbackServer(false);
      const cb = `${receiver.url}/hook?token=abc`;
      const path = `/watches/volumes/${id}`;
      try {
        expect(await c.rest.call('GET', path)).toEqual([]);
        for (const bad of ['ftp://127.0.0.1/x', 'file:///etc/passwd', 'not a url', 'http://u:p@127.0.0.1/']) {
          const err = await fail(c.rest.call('PUT', path, undefined, { callback: bad }));
          expect([err.status, err.kind]).toEqual([400, 'InvalidArgument']);
          expect(err.message).toMatch(/callback/);
        }
        const noCb = await fail(c.rest.call('PUT', path));
        expect(noCb.status).toBe(400);
        const unknown = await fail(
          c.rest.call('PUT', `/watches/volumes/${newVolumeId()}`, undefined, { callback: cb }),
        );
        expect(unknown.status).toBe(404);

        await c.rest.call('PUT', path, undefined, { callback: cb });
        await c.rest.call('PUT', path, undefined, { callback: `${hung.url}/slow` });
        const dup = await fail(c.rest.call('PUT', path, undefined, { callback: cb }));
        expect([dup.status, dup.kind]).toEqual([422, 'AlreadyExists']);
        expect(await c.rest.call('GET', path)).toEqual([
          { resource: `volumes/${id}`, callback: cb },
          { resource: `volumes/${id}`, callback: `${hung.url}/slow` },
        ]);

        // A spec change is POSTed to the callback; the hung receiver does not slow the operation.
        // Had core waited for the hung receiver, that receiver's request would have been dropped by
        // core's 2 s notify timeout before the answer: an order, not a clock, however slow the machine.
        await c.rest.call('PUT', `/volumes/${id}/property`, { max_snapshots: 5 });
        expect(hung.dropped).toBe(0);
        await waitFor(() => receiver.hits.length >= 1, { what: 'callback POST' });
        // …and it is dropped in time: the check above can see a wait.
        await waitFor(() => hung.dropped >= 1, { what: 'the hung callback dropped by its timeout' });
        expect(receiver.hits[0]).toEqual({
          path: '/hook?token=abc',
          body: { resource: `volumes/${id}`, type: 'put' },
        });

        // Durable: a restarted core still has the watches and notifies.
        await c.cores.at(-1)!.kill('SIGTERM');
        await c.startCore(CORE_FLAGS);
        expect((await c.rest.call<unknown[]>('GET', path)).length).toBe(2);
        const seen = receiver.hits.length;
        await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {} });
        await waitFor(() => receiver.hits.length > seen, { what: 'callback POST after restart' });

        await c.rest.call('DELETE', path, undefined, { callback: `${hung.url}/slow` });
        expect(await c.rest.call('GET', path)).toEqual([{ resource: `volumes/${id}`, callback: cb }]);
        const gone = await fail(c.rest.call('DELETE', path, undefined, { callback: `${hung.url}/slow` }));
        expect(gone.status).toBe(404);

        // Deleting the volume notifies once more and drops its watches from the store: the record
        // is there, in Mayastor's key and shape, until the delete (so the wait below can fail).
        const store = await openStore(c.storeUrl);
        try {
          const key = objectKey(c.space, 'WatchConfig', `volumes/${id}`);
          const stored = await store.get(key);
          expect(stored?.value).toBe(watchConfig.encode(volumeWatchConfig(id, [cb])));
          await c.rest.unpublishVolume(id);
          await c.rest.deleteVolume(id);
          await waitFor(() => receiver.hits.some((h) => h.body.type === 'delete'), {
            what: 'delete notification',
          });
          await waitFor(async () => (await store.get(key)) === null, { what: 'WatchConfig removed' });
          expect((await store.range(typePrefix(c.space, 'WatchConfig'))).kvs).toEqual([]);
        } finally {
          await store.close();
        }
      } finally {
        await receiver.close();
        await hung.close();
      }
    }, 60_000);

    it("rewrites a watch record in storctl's old key and shape (WatchConfig/<volume>) to Mayastor's at start", async () => {
      const id = newVolumeId();
      const unknown = newVolumeId();
      await create(id, 1);
      const cb = 'http://127.0.0.1:9/legacy-hook';
      const legacyKey = (v: string) => objectKey(c.space, 'WatchConfig', v);
      const key = (v: string) => objectKey(c.space, 'WatchConfig', `volumes/${v}`);
      const legacy = JSON.stringify({ watches: [{ callback: cb }] });
      await c.cores.at(-1)!.kill('SIGTERM');
      const store = await openStore(c.storeUrl);
      try {
        // Written while no core runs: the next core finds them at start.
        await store.put(legacyKey(id), legacy);
        await store.put(legacyKey(unknown), legacy);
        await c.startCore(CORE_FLAGS);
        expect(await store.get(legacyKey(id))).toBeNull();
        expect((await store.get(key(id)))?.value).toBe(watchConfig.encode(volumeWatchConfig(id, [cb])));
        // A record of a volume that no longer exists is dropped, not moved.
        expect(await store.get(legacyKey(unknown))).toBeNull();
        expect(await store.get(key(unknown))).toBeNull();
        expect(await c.rest.call('GET', `/watches/volumes/${id}`)).toEqual([
          { resource: `volumes/${id}`, callback: cb },
        ]);
        await c.rest.call('DELETE', `/watches/volumes/${id}`, undefined, { callback: cb });
        expect(await store.get(key(id))).toBeNull();
      } finally {
        await store.close();
      }
    }, 60_000);
  });
}
