import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/**
 * An unshared volume stays unshared: `DELETE /volumes/{id}/share` stops the NBD export but keeps the
 * nexus. When the target's io-engine is killed (-9) and restarted, the nexus recreation reconciler
 * brings the nexus back — not exported, because the unshare is recorded in the volume's target
 * (protocol null). Sharing it again works and serves the data written before.
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`an unshared volume stays unshared across an io-engine restart (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('recreates the nexus unshared after kill -9 of its io-engine; share again works', async () => {
      cluster = await TestCluster.start({ backend, engines: 2 });
      const c = cluster;
      const id = newVolumeId();
      const published = await c.createPublished(id, { size: 16 * MiB, replicas: 2, node: 'node-1' });
      const uri = published.state.target!.deviceUri;
      const nexusId = published.state.target!.uuid;
      await qemuIo(uri, 'write -P 0x5e 0 2M');
      await c.rest.call('DELETE', `/volumes/${id}/share`);
      expect((await c.rest.getVolume(id)).state.target?.deviceUri).toBe('');

      const host = c.engine('node-1');
      host.proc.child.kill('SIGKILL');
      await host.proc.wait();
      await waitFor(async () => (await c.rest.getNode('node-1')).state.status === 'Offline', {
        what: 'node-1 Offline',
        timeoutMs: 15_000,
      });
      await c.startEngine('node-1', { grpc: host.grpc, nbd: host.nbd });

      // The nexus is recreated (its Recreated event), with its children, but not exported.
      await waitFor(
        async () => (await c.events()).some((e) => e.includes('"action":"Recreated"') && e.includes(id)),
        { what: 'nexus recreated', timeoutMs: 45_000, intervalMs: 250 },
      );
      const after = await waitFor(
        async () => {
          const v = await c.rest.getVolume(id);
          return v.state.target && v.state.target.children.length > 0 ? v : null;
        },
        { what: 'recreated nexus in the volume state', timeoutMs: 15_000 },
      );
      expect(after.spec.target?.node).toBe('node-1');
      expect(after.spec.target?.protocol).toBeUndefined();
      expect(after.state.target!.deviceUri).toBe('');
      expect(after.state.target!.uuid).toBe(nexusId);
      await expect(qemuIo(uri, 'read -P 0x5e 0 2M')).rejects.toThrow();
      // Still unshared a few reconcile periods later (nothing shares it behind the operator's back).
      const until = Date.now() + 3000;
      let sharedAgain: string | undefined;
      await waitFor(
        async () => {
          const uriNow = (await c.rest.getVolume(id)).state.target?.deviceUri;
          if (uriNow !== '') sharedAgain ??= String(uriNow);
          return Date.now() > until;
        },
        { what: 'three seconds of reconciling', timeoutMs: 10_000, intervalMs: 250 },
      );
      expect(sharedAgain).toBeUndefined();

      // Share again: the same target URI serves the data written before the restart.
      const again = await c.rest.call<string>('PUT', `/volumes/${id}/share/nbd`);
      expect(again).toBe(uri);
      const shared = await c.rest.getVolume(id);
      expect(shared.spec.target?.protocol).toBe('nbd');
      expect(shared.state.target?.deviceUri).toBe(uri);
      await qemuIo(uri, 'read -P 0x5e 0 2M');
    }, 120_000);
  });
