import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nexusInfo } from '../../../src/lib/specs/index.js';
import { nexusInfoKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import type { Backend, TestCluster } from '../core/cluster.js';
import { HaRig } from './fixture.js';
import { DurableWriter } from './writer.js';

const MiB = 1024 * 1024;

/**
 * Automatic failover with real processes: a 2-replica volume published on node-1, staged with ext4
 * through the csi-node's path proxy, an application writing durable blocks. Killing node-1's
 * io-engine (kill -9) makes the ha-node report the path, ha-cluster republish the volume on node-2
 * and re-point the path: the application sees a pause, never an error, and every acknowledged
 * block reads back.
 */
describe.each<Backend>(['embedded', 'etcd'])('HA failover (%s store)', (backend) => {
  let rig: HaRig;
  let cluster: TestCluster;

  beforeAll(async () => {
    rig = await HaRig.start({ backend, engines: 2 });
    cluster = rig.cluster;
  }, 120_000);

  afterAll(() => rig?.stop(), 120_000);

  it('kill -9 of the io-engine hosting the target: the volume fails over, I/O pauses, nothing is lost', {
    timeout: 180_000,
  }, async () => {
    const vol = await rig.published('node-1', { size: 64 * MiB });
    const writer = new DurableWriter(join(await rig.stage(vol), 'data.bin'));
    writer.start();
    await waitFor(() => writer.acked >= 20 || writer.errors.length > 0, { what: 'the writer under way' });

    const engine = cluster.engine('node-1');
    await engine.proc.kill('SIGKILL');
    const ackedAtKill = writer.acked;

    const moved = await waitFor(
      async () => {
        const v = await cluster.rest.getVolume(vol.id);
        return v.state.target?.node === 'node-2' && v.state.target.deviceUri !== vol.uri ? v : null;
      },
      { what: 'the target to move to node-2', timeoutMs: 60_000 },
    );
    // The application goes on through the same mount, on the new target.
    await waitFor(() => writer.acked >= ackedAtKill + 50 || writer.errors.length > 0, {
      what: 'writes to go on after the failover',
      timeoutMs: 60_000,
    });
    await writer.stop();
    expect(writer.errors).toEqual([]);
    const { checked, bad } = await writer.verify();
    expect(bad).toEqual([]);
    expect(checked).toBeGreaterThan(ackedAtKill);

    // The switchover finished exactly once and left no record; the node agent's path points at the new target.
    const completed = async () =>
      (await cluster.events()).filter((e) => e.includes('SwitchOverCompleted') && e.includes(vol.id));
    await waitFor(async () => (await completed()).length > 0, { what: 'the switchover to complete' });
    expect(await completed()).toHaveLength(1);
    const so = await runStorctl(['get', 'switchovers', '-o', 'json'], { env: cluster.env });
    expect(so.code).toBe(0);
    expect(JSON.parse(so.stdout)).toEqual([]);
    // The old target was fenced before the new one served.
    const store = await openStore(cluster.storeUrl);
    try {
      const key = nexusInfoKey(cluster.space, vol.nexus, vol.id);
      const kv = await store.get(key);
      expect(kv && nexusInfo.decode(key, kv.value).do_self_shutdown).toBe(true);
    } finally {
      await store.close();
    }

    // When node-1 is back, the old target is destroyed (it was left Deleting while its node was away).
    await cluster.startEngine('node-1', { grpc: engine.grpc, nbd: engine.nbd });
    await waitFor(
      async () =>
        !(await cluster.rest.call<{ uuid: string }[]>('GET', '/nexuses')).some((n) => n.uuid === vol.nexus),
      { what: 'the old nexus destroyed once node-1 is back', timeoutMs: 60_000 },
    );
    expect(moved.state.target?.uuid).not.toBe(vol.nexus);
  });
});
