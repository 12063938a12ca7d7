import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/** The NodeSpec exactly as stored. */
async function storedNodeSpec(c: TestCluster, node: string): Promise<Record<string, unknown>> {
  const store = await openStore(c.storeUrl);
  try {
    const kv = await store.get(objectKey({ clusterId: c.clusterId, namespace: 'default' }, 'NodeSpec', node));
    return JSON.parse(kv!.value);
  } finally {
    await store.close();
  }
}

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`node drain moves every target off the node (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('storctl node drain --wait: targets move, draining_volumes tracked then emptied, node Drained, data readable', async () => {
      cluster = await TestCluster.start({ backend, engines: 3 });
      const c = cluster;
      const ids = [newVolumeId(), newVolumeId()];
      for (const [i, id] of ids.entries()) {
        await c.rest.createVolume(id, {
          size: 16 * MiB,
          replicas: 2 + i,
          thin: true,
          policy: { self_heal: true },
        });
        const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
        await qemuIo(v.state.target!.deviceUri, `write -P 0x${(0x41 + i).toString(16)} 0 4M`);
      }

      const drain = await runStorctl(['node', 'drain', 'node-1', '--wait', '--timeout', '60'], {
        env: c.env,
      });
      expect(drain.stderr).toMatch(/draining node-1: \d volume target\(s\) left to move/);
      expect(drain.stderr).toContain('node node-1 drained');
      expect(drain.code).toBe(0);
      expect(drain.stdout).toContain('drained: storctl-drain');

      // Stored: Drained with the drain label, and draining_volumes empty (left out, as Mayastor does).
      const spec = await storedNodeSpec(c, 'node-1');
      expect(spec.cordon_drain_state).toEqual({
        Drained: { cordonlabels: [], drainlabels: ['storctl-drain'] },
      });
      expect(spec.draining_volumes).toBeUndefined();
      expect((await c.rest.getNode('node-1')).spec?.cordondrainstate?.drainedstate).toBeTruthy();

      // Each volume was listed as draining before its target moved, and taken off the list after.
      const events = (await c.events()).join('\n');
      for (const id of ids) {
        expect(events).toMatch(new RegExp(`"id":"node-1","action":"DrainingVolumes","message":"[^"]*${id}`));
        expect(events).toMatch(new RegExp(`"id":"node-1","action":"DrainedVolumes","message":"[^"]*${id}`));
        expect(events).toMatch(new RegExp(`"id":"${id}","action":"Moved"`));
      }

      for (const [i, id] of ids.entries()) {
        const v = await c.rest.getVolume(id);
        expect(v.spec.target?.node).not.toBe('node-1');
        expect(v.state.target?.node).not.toBe('node-1');
        await qemuIo(v.state.target!.deviceUri, `read -P 0x${(0x41 + i).toString(16)} 0 4M`);
      }
      // No nexus is left on the drained node.
      const engine = new IoEngineClient(c.engine('node-1').grpc);
      try {
        await waitFor(async () => (await engine.listNexuses()).length === 0, {
          what: 'no nexus left on node-1',
          timeoutMs: 15_000,
        });
      } finally {
        engine.close();
      }

      // Uncordon with the drain label ends the drain: the node is schedulable again.
      await c.rest.uncordonNode('node-1', 'storctl-drain');
      const after = await storedNodeSpec(c, 'node-1');
      expect(after.cordon_drain_state).toBeUndefined();
      expect((await c.rest.getNode('node-1')).state.cordoned).toBe(false);
    }, 120_000);

    it('a target with nowhere to go stays up on the draining node until a node can take it', async () => {
      cluster = await TestCluster.start({ backend, engines: 3 });
      const c = cluster;
      const id = newVolumeId();
      await c.rest.createVolume(id, {
        size: 16 * MiB,
        replicas: 2,
        thin: true,
        policy: { self_heal: false },
      });
      const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
      const uri = v.state.target!.deviceUri;
      await qemuIo(uri, 'write -P 0x77 0 4M');
      await c.rest.cordonNode('node-2', 'hold');
      await c.rest.cordonNode('node-3', 'hold');

      await c.rest.drainNode('node-1', 'storctl-drain');
      await waitFor(
        async () => (await c.events()).some((e) => e.includes(`"id":"${id}","action":"DrainBlocked"`)),
        {
          what: 'drain reports the blocked target',
        },
      );
      // Not torn down: still published where it was, still serving, the node still Draining.
      const still = await c.rest.getVolume(id);
      expect(still.state.target?.node).toBe('node-1');
      await qemuIo(uri, 'read -P 0x77 0 4M');
      const spec = await storedNodeSpec(c, 'node-1');
      expect(Object.keys(spec.cordon_drain_state as object)).toEqual(['Draining']);
      expect(spec.draining_volumes).toEqual([id]);

      // A node becomes available: the drain finishes by itself.
      await c.rest.uncordonNode('node-2', 'hold');
      await waitFor(async () => (await c.rest.getNode('node-1')).spec?.cordondrainstate?.drainedstate, {
        what: 'node-1 Drained',
        timeoutMs: 20_000,
      });
      const moved = await c.rest.getVolume(id);
      expect(moved.state.target?.node).toBe('node-2');
      await qemuIo(moved.state.target!.deviceUri, 'read -P 0x77 0 4M');
      expect((await storedNodeSpec(c, 'node-1')).draining_volumes).toBeUndefined();
    }, 120_000);
  });
}
