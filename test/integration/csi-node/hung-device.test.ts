import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stageRequest } from '../../helpers/csi-client.js';
import { withinDeadline } from '../../helpers/fuzz.js';
import { newVolumeId, TestCluster } from '../core/cluster.js';
import { qemuIo } from '../core/qemu.js';
import { CsiNodeFixture } from './fixture.js';

/**
 * Found by the REST fuzz suite: GET /nodes/{node}/block_devices answered 504 after core's 10 s
 * deadline on a machine with a few hung block devices, and the io-engine stalled meanwhile — every
 * listing left a read of each hung device on one of libuv's four threads, which all of the process's
 * file I/O shares. Here a device of our own hangs for real: the loop device csi-node staged a volume
 * on, its FUSE server (the path proxy) paused. Listing after listing must answer within a few
 * seconds, and the io-engine must go on serving its volumes (its replicas are files: their I/O needs those threads).
 */
describe('an io-engine lists block devices while one of them hangs', () => {
  let cluster: TestCluster | undefined;
  let node: CsiNodeFixture | undefined;
  let paused: number | undefined;
  afterEach(async () => {
    if (paused) process.kill(paused, 'SIGCONT');
    await node?.dispose();
    await cluster?.stop();
  });

  it('six listings each answer within 5 s, the hung device shown, and NBD I/O to a volume goes on', async () => {
    cluster = await TestCluster.start({ engines: 1 });
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    const staged = newVolumeId();
    const uri = (await cluster.createPublished(staged, { size: 64 << 20, replicas: 1, node: 'node-1' })).state
      .target!.deviceUri!;
    const staging = join(node.root, 'plugins', staged, 'globalmount');
    await node.csi!.node('NodeStageVolume', stageRequest({ volumeId: staged, staging, uri }));
    const state = JSON.parse(readFileSync(join(node.stateDir, 'state.json'), 'utf8'));
    const { device } = state.volumes[staged].device as { device: string };
    // fuse-loop: the path proxy serves the loop device's file.
    const fusePid = state.volumes[staged].proxy.pid as number;
    // A second volume, served by the same io-engine, for I/O while the device hangs.
    const other = newVolumeId();
    const otherUri = (await cluster.createPublished(other, { size: 16 << 20, replicas: 1, node: 'node-1' }))
      .state.target!.deviceUri!;

    // Nothing of the device cached, then its FUSE daemon paused: every read of it now hangs.
    execFileSync('blockdev', ['--flushbufs', device]);
    process.kill(fusePid, 'SIGSTOP');
    paused = fusePid;
    for (let i = 0; i < 6; i++) {
      const t0 = Date.now();
      const list = await withinDeadline(
        `listing #${i}`,
        5_000,
        cluster.rest.call<{ devname: string }[]>('GET', '/nodes/node-1/block_devices?all=true'),
      );
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(list.map((d) => d.devname)).toContain(device);
      await withinDeadline(
        `NBD I/O after listing #${i}`,
        5_000,
        qemuIo(otherUri, `write -P 0x${(i + 1) * 11} 0 64k`, `read -P 0x${(i + 1) * 11} 0 64k`),
      );
    }
    process.kill(fusePid, 'SIGCONT');
    paused = undefined;
    await node.csi!.node('NodeUnstageVolume', { volume_id: staged, staging_target_path: staging });
    expect(await node.leftovers()).toEqual([]);
  }, 120_000);
});
