import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import type { Volume } from '../../../src/lib/rest/types.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, FAST_CORE_FLAGS, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;

/** Node deadline far beyond the test's patience: only the faulted-child path can heal in time. */
const LONG_DEADLINE_FLAGS = FAST_CORE_FLAGS.map((f, i, a) => (a[i - 1] === '--node-deadline' ? '600s' : f));

const replicaIds = (v: Volume) => Object.keys(v.state.replica_topology);
const replicaNodeOf = (v: Volume, uuid: string) => v.state.replica_topology[uuid]?.node;

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`self-heal of a faulted nexus child on a live node (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    let grpc: IoEngineClient | undefined;
    afterEach(async () => {
      grpc?.close();
      grpc = undefined;
      await cluster?.stop();
      cluster = undefined;
    });

    // Three engines, three replicas: the only place for the replacement is the faulted child's node.
    // With a fourth, the replacement goes there: the faulted node is tried last.
    it.each<[number, string]>([
      [3, 'node-2'],
      ...(backend === 'embedded' ? [[4, 'node-4'] as [number, string]] : []),
    ])(
      'with %i io-engines, replaces the faulted child promptly on %s, content intact',
      async (engines, replacedOn) => {
        cluster = await TestCluster.start({ backend, engines, coreFlags: LONG_DEADLINE_FLAGS });
        const c = cluster;
        const id = newVolumeId();
        await c.rest.createVolume(id, {
          size: 32 * MiB,
          replicas: 3,
          thin: false,
          policy: { self_heal: true },
        });
        const published = await c.rest.publishVolume(id, {
          protocol: 'nbd',
          publish_context: {},
          node: 'node-1',
        });
        const uri = published.state.target!.deviceUri;
        await qemuIo(uri, 'write -P 0x5a 0 8M');

        // Fault the child of the replica on node-2 through the target's io-engine gRPC API.
        const victim = replicaIds(published).find((r) => replicaNodeOf(published, r) === 'node-2')!;
        expect(victim).toBeTruthy();
        grpc = new IoEngineClient(c.engine('node-1').grpc);
        const nexus = (await grpc.listNexuses()).find((n) => n.volumeId === id)!;
        const child = nexus.children.find((ch) => ch.uri.includes(victim))!;
        const after = await grpc.faultNexusChild(nexus.uuid, child.uri);
        expect(after.children.find((ch) => ch.uri === child.uri)?.state).toBe('Faulted');
        // Writes while the volume heals land on every healthy child and on the rebuild.
        await qemuIo(uri, 'write -P 0xa5 8M 8M');

        // The bound is this wait's patience (60 s), a tenth of the 600 s node deadline: healed in time,
        // it was healed by the faulted-child path (and the events below say so), never by the node's.
        const healed = await c.volumeWhere(
          id,
          (v) => {
            const ids = replicaIds(v);
            return (
              v.state.status === 'Online' &&
              ids.length === 3 &&
              !ids.includes(victim) &&
              v.state.target?.children.length === 3 &&
              v.state.target.children.every((ch) => ch.state === 'Online')
            );
          },
          { what: 'volume Online with the faulted replica replaced', timeoutMs: 60_000, intervalMs: 250 },
        );
        const replacement = replicaIds(healed).find((r) => !replicaIds(published).includes(r))!;
        expect(replicaNodeOf(healed, replacement)).toBe(replacedOn);
        expect(healed.state.target!.deviceUri).toBe(uri);
        await qemuIo(uri, 'read -P 0x5a 0 8M', 'read -P 0xa5 8M 8M');

        // The faulted replica is gone from its pool (destroyed, or garbage collected).
        const node2 = new IoEngineClient(c.engine('node-2').grpc);
        try {
          await waitFor(async () => !(await node2.listReplicas()).some((r) => r.uuid === victim), {
            what: 'faulted replica destroyed on node-2',
            timeoutMs: 15_000,
          });
        } finally {
          node2.close();
        }
        const events = (await c.events()).join('\n');
        expect(events).toMatch(new RegExp(`"id":"${victim}","action":"Removed".*faulted`));
        expect(events).toContain('"Healing"');
        // The node never went away.
        expect(events).not.toContain('"id":"node-2","action":"Offline"');
        expect((await c.rest.getNode('node-2')).state.status).toBe('Online');
      },
      120_000,
    );
  });
}
