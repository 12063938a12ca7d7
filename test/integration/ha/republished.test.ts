import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HaNodeClient } from '../../../src/lib/ha/clients.js';
import { waitFor } from '../../helpers/wait.js';
import type { TestCluster } from '../core/cluster.js';
import { HaRig } from './fixture.js';

/**
 * A staged volume unpublished behind the node's back (a CO detaching a node it thought dead, an
 * operator's `volume unpublish`): its path fails, and the switchover it starts ends Errored, as
 * there is no target to move. Once the volume is published again the path is re-pointed to the new
 * target, because the ha-node reports a path that stays Failed again: the mounted filesystem comes
 * back, not stuck for good. Until then no new switchover is recorded for every report.
 */
describe('HA: a staged volume unpublished, then published again', () => {
  let rig: HaRig;
  let cluster: TestCluster;
  beforeAll(async () => {
    rig = await HaRig.start({ engines: 2 });
    cluster = rig.cluster;
  }, 120_000);
  afterAll(() => rig?.stop(), 120_000);

  const stageOf = (id: string) => rig.switchoverStage(id);
  const started = async (id: string) =>
    (await cluster.events()).filter((e) => e.includes(`"id":"${id}","action":"SwitchOverStarted"`)).length;

  it('the path is re-pointed once the volume is published again; no switchover per report meanwhile', {
    timeout: 120_000,
  }, async () => {
    const vol = await rig.published('node-1');
    const staging = await rig.stage(vol);
    writeFileSync(join(staging, 'before.txt'), 'written before\n');
    expect(spawnSync('sync', ['-f', join(staging, 'before.txt')]).status).toBe(0);

    await cluster.rest.unpublishVolume(vol.id);
    await waitFor(async () => (await stageOf(vol.id)) === 'Errored', {
      what: 'the switchover of the unpublished volume to end Errored',
      timeoutMs: 30_000,
    });
    // Reported again (every second here) while unpublished: answered, but no new switchover.
    const haNode = new HaNodeClient(rig.haNode.endpoint);
    const path = async () => (await haNode.getPaths()).paths.find((p) => p.volume_id === vol.id);
    const firstReport = Number((await path())?.checked_at_ms);
    await waitFor(async () => Number((await path())?.checked_at_ms) > firstReport + 3000, {
      what: 'three report periods to pass',
    });
    expect(await started(vol.id)).toBe(1);

    const again = await cluster.rest.publishVolume(vol.id, {
      protocol: 'nbd',
      publish_context: {},
      node: 'node-2',
      frontend_node: 'csi-node-1',
    });
    const uri = again.state.target!.deviceUri;
    await waitFor(
      async () => {
        const p = await path();
        return p?.target_uri === uri && p.state === 'Good';
      },
      { what: 'the path re-pointed to the new target', timeoutMs: 30_000 },
    );
    // That switchover ends Successful (its record is removed then), after DeleteTarget.
    await waitFor(async () => [null, 'Successful'].includes(await stageOf(vol.id)), {
      what: 'the switchover to end',
    });
    expect(await started(vol.id)).toBe(2);
    // The filesystem serves again: old data reads back, a new file reaches the target.
    expect(readFileSync(join(staging, 'before.txt'), 'utf8')).toBe('written before\n');
    writeFileSync(join(staging, 'after.txt'), 'written after\n');
    expect(spawnSync('sync', ['-f', join(staging, 'after.txt')], { timeout: 20_000 }).status).toBe(0);
    haNode.close();
  });

  it('a path whose proxy died is lost on this node: Failed, said once, and no switchover moves the healthy target', {
    timeout: 120_000,
  }, async () => {
    const vol = await rig.published('node-1');
    await rig.stage(vol);
    const rec = JSON.parse(readFileSync(join(rig.node.stateDir, 'state.json'), 'utf8')).volumes[vol.id];
    process.kill(rec.proxy.pid, 'SIGKILL');
    const haNode = new HaNodeClient(rig.haNode.endpoint);
    try {
      const path = async () => (await haNode.getPaths()).paths.find((p) => p.volume_id === vol.id);
      const lost = await waitFor(
        async () => {
          const p = await path();
          return p?.state === 'Failed' ? p : null;
        },
        { what: 'the path Failed', timeoutMs: 30_000 },
      );
      expect(lost.last_error).toMatch(/^the path proxy \(pid \d+\) is gone: every I\/O on the volume fails/);
      const firstSeen = Number(lost.checked_at_ms);
      await waitFor(async () => Number((await path())?.checked_at_ms) > firstSeen + 3000, {
        what: 'three probe periods to pass',
      });
      // Before: reported, a switchover moved the (healthy) target and failed at ReplacePath for good.
      expect(await started(vol.id)).toBe(0);
      expect(await stageOf(vol.id)).toBeNull();
      expect((await cluster.rest.getVolume(vol.id)).state.target?.node).toBe('node-1');
      expect(rig.haNode.proc.output.split('path lost on this node')).toHaveLength(2);
    } finally {
      haNode.close();
    }
  });
});
