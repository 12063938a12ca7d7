import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HaClusterClient } from '../../../src/lib/ha/clients.js';
import { NbdClient } from '../../../src/lib/nbd/client.js';
import { runStorctl, type StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import type { Backend, TestCluster } from '../core/cluster.js';
import { HaRig, PAUSABLE_CORE_FLAGS, type PublishedVolume, startHaNode } from './fixture.js';
import { BLOCK, blockOf, DurableWriter } from './writer.js';

const MiB = 1024 * 1024;
describe.each<Backend>(['embedded', 'etcd'])(
  'storctl switchover and the switchover state machine (%s store)',
  (backend) => {
    let rig: HaRig;
    let cluster: TestCluster;
    let ha: { proc: StorctlProcess; endpoint: string };
    let haNode: { proc: StorctlProcess; endpoint: string };

    beforeAll(async () => {
      // Core keeps its lease while the tests pause it (SIGSTOP) for a few seconds.
      rig = await HaRig.start({ backend, engines: 3, coreFlags: PAUSABLE_CORE_FLAGS });
      ({ cluster, ha, haNode } = rig);
    }, 120_000);

    afterAll(() => rig?.stop(), 120_000);

    const cli = (args: string[]) => runStorctl(args, { env: cluster.env });

    const published = (targetNode: string, replicas = 2) => rig.published(targetNode, { replicas });
    const stage = (vol: PublishedVolume) => rig.stage(vol);

    const targetOf = async (id: string) => (await cluster.rest.getVolume(id)).state.target;
    const events = async (action: string, id: string) =>
      (await cluster.events())
        .map((e) => JSON.parse(e) as { action: string; id: string })
        .filter((e) => e.action === action && e.id === id);
    const stageInStore = (id: string) => rig.switchoverStage(id);

    it('a forced switchover of a healthy, mounted volume moves its target with no I/O error', {
      timeout: 120_000,
    }, async () => {
      const vol = await published('node-1');
      const writer = new DurableWriter(join(await stage(vol), 'data.bin'));
      writer.start();
      await waitFor(() => writer.acked >= 20 || writer.errors.length > 0, { what: 'the writer under way' });
      const r = await cli(['switchover', '--volume', vol.id, '--to-node', 'node-2', '--wait', '-o', 'json']);
      expect(r.stderr).toContain('RepublishVolume');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({
        volume_id: vol.id,
        stage: 'Successful',
        done: true,
        failed: false,
        target_node: 'node-2',
      });
      expect(out.new_target_uri).not.toBe(vol.uri);
      const after = writer.acked;
      await waitFor(() => writer.acked >= after + 20 || writer.errors.length > 0, {
        what: 'writes to go on',
      });
      await writer.stop();
      expect(writer.errors).toEqual([]);
      expect((await writer.verify()).bad).toEqual([]);
      expect((await targetOf(vol.id))?.node).toBe('node-2');
      // The old target on node-1 (alive) was destroyed by DeleteTarget.
      const nexuses = await cluster.rest.call<{ uuid: string }[]>('GET', '/nexuses');
      expect(nexuses.some((n) => n.uuid === vol.nexus)).toBe(false);
    });

    it('refuses with the reason: not published, no healthy replica elsewhere, unknown volume, nothing to cancel', async () => {
      const id = randomUUID();
      const created = await cluster.rest.createVolume(id, {
        size: 16 * MiB,
        replicas: 1,
        thin: true,
        policy: { self_heal: false },
      });
      const unpublished = await cli(['switchover', '--volume', id]);
      expect(unpublished.code).toBe(4);
      expect(unpublished.stderr).toContain('is not published');
      // Published where its only replica is (wherever earlier tests left room for it).
      const replicaNode = Object.values(created.state.replica_topology)[0].node;
      await cluster.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: replicaNode });
      const single = await cli(['switchover', '--volume', id]);
      expect(single.code).toBe(4);
      expect(single.stderr).toContain('no healthy replica on a node other than');
      const unknown = await cli(['switchover', '--volume', randomUUID()]);
      expect(unknown.code).toBe(3);
      const cancel = await cli(['switchover', '--volume', id, '--cancel']);
      expect(cancel.code).toBe(3);
      const bad = await cli(['switchover', '--volume', 'not-a-uuid']);
      expect(bad.code).toBe(2);
      expect(await stageInStore(id)).toBeNull();

      // A node that does not exist fails the switchover, and the volume keeps the target it had:
      // the new node is checked before the old target is torn down.
      const vol = await published('node-3');
      const typo = await cli(['switchover', '--volume', vol.id, '--to-node', 'node-9', '--wait']);
      expect(typo.code).toBe(1);
      expect(typo.stderr).toContain("failed: NotFound: node 'node-9' not found");
      expect(typo.stderr).not.toContain('target moved to');
      expect(typo.stdout).toBe('');
      expect(await targetOf(vol.id)).toMatchObject({ uuid: vol.nexus, node: 'node-3', deviceUri: vol.uri });
      const reader = await NbdClient.connect(vol.uri);
      await reader.read(Buffer.alloc(BLOCK), 0);
      await reader.close();
    });

    it('an operator moves a target that is not served (its io-engine died) like any other', {
      timeout: 120_000,
    }, async () => {
      const vol = await published('node-2');
      const engine = cluster.engine('node-2');
      await engine.proc.kill('SIGKILL');
      try {
        await cluster.volumeWhere(vol.id, (v) => v.state.target?.deviceUri === '', {
          what: 'the target no longer served',
        });
        const r = await cli(['switchover', '--volume', vol.id, '--wait', '-o', 'json']);
        expect(r.stderr).not.toContain('is not published');
        expect(r.code).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ stage: 'Successful', done: true, failed: false });
      } finally {
        await cluster.startEngine('node-2', { grpc: engine.grpc, nbd: engine.nbd });
      }
      // Its replica on node-2 rebuilt into the new target: core uses node-2 again (the next tests
      // place replicas there).
      await rig.healthy(vol.id, 2, 60_000);
      const target = await targetOf(vol.id);
      expect(target?.node).not.toBe('node-2');
      const reader = await NbdClient.connect(target!.deviceUri);
      await reader.read(Buffer.alloc(BLOCK), 0);
      await reader.close();
    });

    it('split brain: a stalled io-engine whose target moved refuses I/O when it resumes; the new target is the only truth', {
      timeout: 120_000,
    }, async () => {
      const vol = await published('node-3');
      const staging = await stage(vol);
      const writer = new DurableWriter(join(staging, 'data.bin'));
      writer.start();
      await waitFor(() => writer.acked >= 10 || writer.errors.length > 0, { what: 'the writer under way' });
      // A second client of the old target, connected before the stall (as a partitioned host would be).
      const stale = await NbdClient.connect(vol.uri);
      const probe = Buffer.alloc(BLOCK);
      await stale.read(probe, 0);
      const engine = cluster.engine('node-3');
      process.kill(engine.proc.pid, 'SIGSTOP');
      try {
        await waitFor(async () => ((await targetOf(vol.id))?.uuid !== vol.nexus ? true : null), {
          what: 'the target to move off the stalled node',
          timeoutMs: 60_000,
        });
        await waitFor(async () => (await events('SwitchOverCompleted', vol.id)).length > 0, {
          what: 'the switchover to finish',
        });
      } finally {
        process.kill(engine.proc.pid, 'SIGCONT');
      }
      await writer.stop();
      expect(writer.errors).toEqual([]);
      // The old nexus answers the stale client's write with an error (its replica on another node is
      // now reserved by the new nexus), never with success.
      const garbage = Buffer.alloc(BLOCK, 0x5a);
      await expect(stale.write(garbage, 0, true)).rejects.toThrow();
      await stale.close().catch(() => {});
      expect((await writer.verify()).bad).toEqual([]);
      // The fence made the old nexus shut down on its own.
      await waitFor(
        async () => {
          const nx = await cluster.rest.call<{ uuid: string; state: string }[]>('GET', '/nexuses');
          const old = nx.find((n) => n.uuid === vol.nexus);
          return !old || old.state === 'Shutdown';
        },
        { what: 'the old nexus shut down or destroyed', timeoutMs: 30_000 },
      );
    });

    it('kill -9 of ha-cluster at RepublishVolume, ReplacePath and DeleteTarget: the switchover finishes exactly once', {
      timeout: 240_000,
    }, async () => {
      const vol = await published('node-1');
      const staging = await stage(vol);
      const core = cluster.cores[cluster.cores.length - 1];
      const restart = async () => {
        await ha.proc.kill('SIGKILL');
        ha = await rig.startHaCluster();
      };
      const reportOnce = async () => {
        const c = new HaClusterClient(ha.endpoint);
        try {
          return await c.report('csi-node-1', haNode.endpoint, [
            { volume_id: vol.id, target_uri: vol.uri, reason: 'test' },
          ]);
        } finally {
          c.close();
        }
      };
      // RepublishVolume: core paused, so the stage cannot finish.
      process.kill(core.pid, 'SIGSTOP');
      try {
        expect((await reportOnce()).statuses).toEqual([]);
        expect((await reportOnce()).statuses.map((s) => s.status_code)).toEqual([6]); // ALREADY_EXISTS
        await waitFor(async () => (await stageInStore(vol.id)) === 'RepublishVolume', {
          what: 'stage RepublishVolume',
        });
        await ha.proc.kill('SIGKILL');
        process.kill(haNode.proc.pid, 'SIGSTOP');
      } finally {
        process.kill(core.pid, 'SIGCONT');
      }
      // ReplacePath: the node agent paused.
      try {
        ha = await rig.startHaCluster();
        await waitFor(async () => (await stageInStore(vol.id)) === 'ReplacePath', {
          what: 'stage ReplacePath',
          timeoutMs: 60_000,
        });
        process.kill(core.pid, 'SIGSTOP');
        await ha.proc.kill('SIGKILL');
      } finally {
        process.kill(haNode.proc.pid, 'SIGCONT');
      }
      // DeleteTarget: core paused again.
      try {
        ha = await rig.startHaCluster();
        await waitFor(async () => (await stageInStore(vol.id)) === 'DeleteTarget', {
          what: 'stage DeleteTarget',
          timeoutMs: 60_000,
        });
        await restart(); // kill -9, and a new one resumes while core is still paused
      } finally {
        process.kill(core.pid, 'SIGCONT');
      }
      await waitFor(async () => (await stageInStore(vol.id)) === null, {
        what: 'the switchover to finish',
        timeoutMs: 60_000,
      });
      expect(await events('SwitchOverCompleted', vol.id)).toHaveLength(1);
      expect(await events('SwitchOverStarted', vol.id)).toHaveLength(1);
      // The target moved once: one publish after the original one.
      expect(await events('Published', vol.id)).toHaveLength(2);
      const target = await targetOf(vol.id);
      expect(target?.node).not.toBe('node-1');
      // The path follows the new target: a write through the mount works and reads back.
      const w = new DurableWriter(join(staging, 'after.bin'));
      w.start();
      await waitFor(() => w.acked >= 5 || w.errors.length > 0, { what: 'writes on the moved volume' });
      await w.stop();
      expect(w.errors).toEqual([]);
      expect((await w.verify()).bad).toEqual([]);
      expect(blockOf(0).length).toBe(BLOCK);
    });

    it('the ha-node that reported the path restarts on another port mid-switchover: the path is re-pointed through the new one', {
      timeout: 120_000,
    }, async () => {
      const vol = await published('node-1');
      const writer = new DurableWriter(join(await stage(vol), 'data.bin'));
      writer.start();
      await waitFor(() => writer.acked >= 10 || writer.errors.length > 0, { what: 'the writer under way' });
      const core = cluster.cores[cluster.cores.length - 1];
      const reporter = new HaClusterClient(ha.endpoint);
      // RepublishVolume cannot finish while core is paused: meanwhile the reporting agent restarts.
      process.kill(core.pid, 'SIGSTOP');
      try {
        const answer = await reporter.report('csi-node-1', haNode.endpoint, [
          { volume_id: vol.id, target_uri: vol.uri, reason: 'test' },
        ]);
        expect(answer.statuses).toEqual([]);
        const old = haNode;
        await old.proc.kill('SIGKILL');
        haNode = rig.haNode = await startHaNode(cluster, {
          node: 'csi-node-1',
          clusters: [ha.endpoint],
          csiNode: String(rig.node.ready.fsEndpoint),
        });
        expect(haNode.endpoint).not.toBe(old.endpoint);
        await waitFor(() => haNode.proc.output.includes('registered with ha-cluster'), {
          what: 'the new ha-node registered',
        });
      } finally {
        reporter.close();
        process.kill(core.pid, 'SIGCONT');
      }
      await waitFor(
        async () => (await stageInStore(vol.id)) === null || (await stageInStore(vol.id)) === 'Errored',
        {
          what: 'the switchover to end',
          timeoutMs: 60_000,
        },
      );
      expect(await events('SwitchOverFailed', vol.id)).toEqual([]);
      expect(await events('SwitchOverCompleted', vol.id)).toHaveLength(1);
      const after = writer.acked;
      await waitFor(() => writer.acked >= after + 10 || writer.errors.length > 0, {
        what: 'writes to go on',
      });
      await writer.stop();
      expect(writer.errors).toEqual([]);
      expect((await writer.verify()).bad).toEqual([]);
    });

    it('a volume being unstaged while its target hangs: HA re-points its path, the unmount flushes, and the data is there', {
      timeout: 120_000,
    }, async () => {
      const vol = await published('node-1');
      const staging = await stage(vol);
      const data = randomBytes(8 * MiB);
      // Written, not synced: the unmount of NodeUnstageVolume writes it, through the path.
      writeFileSync(join(staging, 'dirty.bin'), data);
      const engine = cluster.engine('node-1');
      process.kill(engine.proc.pid, 'SIGSTOP');
      try {
        // The unstage holds the volume while its flush waits on the hung target; HA's ReplacePath
        // must get through to re-point the path, or the flush never ends (until the path times out).
        await rig.node.csi!.node('NodeUnstageVolume', { volume_id: vol.id, staging_target_path: staging });
      } finally {
        process.kill(engine.proc.pid, 'SIGCONT');
      }
      expect(await events('SwitchOverFailed', vol.id)).toEqual([]);
      const target = await targetOf(vol.id);
      expect(target?.node).not.toBe('node-1');
      const again = await stage({ ...vol, uri: target!.deviceUri });
      expect(readFileSync(join(again, 'dirty.bin')).equals(data)).toBe(true);
    });

    it('50 volumes reported at once, in duplicate and concurrent reports, each switch over exactly once', {
      timeout: 240_000,
    }, async () => {
      const vols: Awaited<ReturnType<typeof published>>[] = [];
      for (let i = 0; i < 50; i++) vols.push(await published(i % 2 ? 'node-2' : 'node-3'));
      const paths = vols.map((v) => ({ volume_id: v.id, target_uri: v.uri, reason: 'test' }));
      const clients = [0, 1, 2].map(() => new HaClusterClient(ha.endpoint));
      try {
        const answers = await Promise.all(clients.map((c) => c.report('csi-node-1', haNode.endpoint, paths)));
        // Every volume was accepted by exactly one report; the others were told it already exists.
        for (const v of vols) {
          const refused = answers.filter((a) => a.statuses.some((s) => s.volume_id === v.id)).length;
          expect(refused).toBe(2);
        }
      } finally {
        for (const c of clients) c.close();
      }
      await waitFor(
        async () => {
          for (const v of vols) if ((await stageInStore(v.id)) !== null) return false;
          return true;
        },
        { what: 'all 50 switchovers to finish', timeoutMs: 180_000 },
      );
      for (const v of vols) {
        expect(await events('SwitchOverStarted', v.id)).toHaveLength(1);
        expect(await events('SwitchOverCompleted', v.id)).toHaveLength(1);
        expect((await targetOf(v.id))?.node).not.toBe(v.node);
      }
    });
  },
);
