import { afterEach, describe, expect, it } from 'vitest';
import type { Volume } from '../../../src/lib/rest/types.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, FAST_CORE_FLAGS, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

const replicaNodes = (v: Volume) => Object.values(v.state.replica_topology).map((r) => r.node!);

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core reconcilers with real io-engine failures (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('self-heals: a replica lost with its node is rebuilt on the spare node, serving all along', async () => {
      cluster = await TestCluster.start({ backend, engines: 4 });
      const c = cluster;
      const id = newVolumeId();
      const created = await c.rest.createVolume(id, {
        size: 32 * MiB,
        replicas: 3,
        thin: false,
        policy: { self_heal: true },
      });
      const holders = replicaNodes(created);
      const spare = c.engines.map((e) => e.node).find((n) => !holders.includes(n))!;
      const published = await c.rest.publishVolume(id, {
        protocol: 'nbd',
        publish_context: {},
        node: holders[0],
      });
      const uri = published.state.target!.deviceUri;
      await qemuIo(uri, 'write -P 0x11 0 8M');

      // kill -9 an io-engine holding a replica (not the target's).
      const victim = c.engine(holders[2]);
      victim.proc.child.kill('SIGKILL');
      await victim.proc.wait();

      // Degraded, and still serving reads and writes.
      await waitFor(async () => (await c.rest.getVolume(id)).state.status === 'Degraded', {
        what: 'volume Degraded',
        timeoutMs: 15_000,
      });
      await qemuIo(uri, 'write -P 0x22 8M 8M', 'read -P 0x11 0 8M');

      // After the node deadline a replacement replica is built on the spare node and rebuilt.
      const healed = await c.volumeWhere(
        id,
        (v) => v.state.status === 'Online' && replicaNodes(v).includes(spare),
        { what: 'volume Online with a replica on the spare node', timeoutMs: 45_000, intervalMs: 250 },
      );
      expect(replicaNodes(healed).sort()).toEqual([holders[0], holders[1], spare].sort());
      expect(healed.state.target!.children.every((ch) => ch.state === 'Online')).toBe(true);
      await qemuIo(uri, 'read -P 0x11 0 8M', 'read -P 0x22 8M 8M');
      const events = (await c.events()).join('\n');
      expect(events).toContain('"Healing"');
      expect(events).toContain(`"id":"${victim.node}","action":"Offline"`);
      expect(events).toMatch(new RegExp(`"id":"${id}","action":"Degraded"`));
    }, 120_000);

    it('after kill -9 of the io-engine hosting targets: pools re-imported, nexuses recreated, data intact', async () => {
      // A long node deadline: this test is about the restart, not about replacing replicas.
      const flags = FAST_CORE_FLAGS.map((f, i, a) => (a[i - 1] === '--node-deadline' ? '60s' : f));
      cluster = await TestCluster.start({ backend, engines: 3, coreFlags: flags });
      const c = cluster;
      const ids = [newVolumeId(), newVolumeId()];
      const uris: string[] = [];
      for (const [i, id] of ids.entries()) {
        await c.rest.createVolume(id, {
          size: 16 * MiB,
          replicas: 3,
          thin: true,
          policy: { self_heal: true },
        });
        const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
        uris.push(v.state.target!.deviceUri);
        await qemuIo(v.state.target!.deviceUri, `write -P 0x${(0x30 + i).toString(16)} 0 4M`);
      }
      const host = c.engine('node-1');
      host.proc.child.kill('SIGKILL');
      await host.proc.wait();
      await waitFor(async () => (await c.rest.getNode('node-1')).state.status === 'Offline', {
        what: 'node-1 Offline',
        timeoutMs: 15_000,
      });
      // What was polled from the dead io-engine is gone with it: its targets do not read Online.
      for (const id of ids) expect((await c.rest.getVolume(id)).state.status).toBe('Unknown');
      // Same ports, as a restarted node would have: the target URIs stay valid.
      await c.startEngine('node-1', { grpc: host.grpc, nbd: host.nbd });

      for (const [i, id] of ids.entries()) {
        const v = await waitFor(
          async () => {
            const vol = await c.rest.getVolume(id);
            const t = vol.state.target;
            return vol.state.status === 'Online' && t?.children.length === 3 && t.deviceUri === uris[i]
              ? vol
              : null;
          },
          { what: `volume ${i} target recreated and rebuilt`, timeoutMs: 45_000, intervalMs: 250 },
        );
        expect(v.state.target!.deviceUri).toBe(uris[i]);
        await qemuIo(uris[i], `read -P 0x${(0x30 + i).toString(16)} 0 4M`);
      }
      const pools = await c.rest.listPools();
      expect(pools.find((p) => p.spec?.node === 'node-1')?.state?.status).toBe('Online');
      const events = (await c.events()).join('\n');
      expect(events).toContain('"Imported"');
      expect(events).toContain('"Recreated"');
    }, 120_000);
  });
}
