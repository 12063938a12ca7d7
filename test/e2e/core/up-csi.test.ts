import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CsiClient, stageRequest } from '../../helpers/csi-client.js';
import type { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import {
  type CsiVolume,
  createRequest,
  MiB,
  mountCap,
} from '../../integration/csi-controller/controller-process.js';
import { forceCleanupBelow, loopsBelow } from '../../integration/csi-node/fixture.js';
import { UpHome } from './up-fixture.js';

/**
 * `storctl up` runs the block CSI driver too: it prints both sockets and records them, and a volume
 * goes the whole CSI way through them — created and published by the controller, staged as ext4 by
 * the node under the cluster's kubelet directory, written, read back, unstaged, deleted.
 */
describe('storctl up runs the block CSI driver (built CLI)', () => {
  const cluster = new UpHome();
  let up: StorctlProcess;
  const endpoints = () => cluster.endpoints();

  beforeAll(async () => {
    up = await cluster.start();
  }, 90_000);
  afterAll(async () => {
    await up?.kill('SIGINT');
    // A test that failed with a volume staged leaves its mounts, loop device and proxy: undone here.
    await forceCleanupBelow(cluster.home, cluster.home, await loopsBelow(cluster.home));
    rmSync(cluster.home, { recursive: true, force: true });
  });

  it('prints and records both CSI sockets; a volume is created, published, staged, written and deleted through them', async () => {
    const { csiControllerSocket, csiNodeSocket, csiNodeRoot } = endpoints();
    expect(up.output).toContain(`csi-controller unix://${csiControllerSocket}`);
    expect(up.output).toMatch(new RegExp(`^csi-node +unix://${csiNodeSocket} `, 'm'));
    const ctl = new CsiClient(csiControllerSocket);
    const node = new CsiClient(csiNodeSocket);
    try {
      expect((await ctl.identity<{ name: string }>('GetPluginInfo')).name).toBe(
        (await node.identity<{ name: string }>('GetPluginInfo')).name,
      );
      const { node_id } = await node.node<{ node_id: string }>('NodeGetInfo');
      const { volume } = await ctl.controller<{ volume: CsiVolume }>(
        'CreateVolume',
        createRequest(`pvc-${randomUUID()}`, { required: 64 * MiB, parameters: { repl: '3' } }),
      );
      const published = await waitFor(
        () =>
          ctl
            .controller<{ publish_context: { uri: string } }>('ControllerPublishVolume', {
              volume_id: volume.volume_id,
              node_id,
              volume_capability: mountCap(),
              readonly: false,
            })
            .catch(() => null),
        { what: 'the csi-node known to the controller (registered as an app node)' },
      );
      const staging = join(csiNodeRoot, 'plugins', volume.volume_id, 'globalmount');
      await node.node(
        'NodeStageVolume',
        stageRequest({ volumeId: volume.volume_id, staging, uri: published.publish_context.uri }),
      );
      await writeFile(join(staging, 'hello.txt'), 'through the whole CSI path\n');
      expect(await readFile(join(staging, 'hello.txt'), 'utf8')).toBe('through the whole CSI path\n');
      await node.node('NodeUnstageVolume', { volume_id: volume.volume_id, staging_target_path: staging });
      expect(existsSync(join(staging, 'hello.txt'))).toBe(false);
      await ctl.controller('ControllerUnpublishVolume', { volume_id: volume.volume_id, node_id });
      await ctl.controller('DeleteVolume', { volume_id: volume.volume_id });
      await expect(
        ctl.controller('ControllerGetVolume', { volume_id: volume.volume_id }),
      ).rejects.toMatchObject({
        code: 5,
      });
    } finally {
      ctl.close();
      node.close();
    }
  }, 120_000);

  it("stopping flushes what a staged volume's page cache holds to its replica, names it, and the next up serves it", async () => {
    const { csiControllerSocket, csiNodeSocket, csiNodeRoot } = endpoints();
    const ctl = new CsiClient(csiControllerSocket);
    const node = new CsiClient(csiNodeSocket);
    const { node_id } = await node.node<{ node_id: string }>('NodeGetInfo');
    const { volume } = await ctl.controller<{ volume: CsiVolume }>(
      'CreateVolume',
      createRequest(`pvc-${randomUUID()}`, { required: 16 * MiB, parameters: { repl: '1' } }),
    );
    const publish = () =>
      ctl.controller<{ publish_context: { uri: string } }>('ControllerPublishVolume', {
        volume_id: volume.volume_id,
        node_id,
        volume_capability: mountCap(),
        readonly: false,
      });
    const staging = join(csiNodeRoot, 'plugins', volume.volume_id, 'globalmount');
    const stage = async () =>
      node.node(
        'NodeStageVolume',
        stageRequest({ volumeId: volume.volume_id, staging, uri: (await publish()).publish_context.uri }),
      );
    await stage();
    ctl.close();
    node.close();
    // Written, not synced: the bytes sit in the page cache of the staged ext4.
    const marker = `flushed-before-the-engines-stopped-${randomUUID()}`;
    await writeFile(join(staging, 'dirty.txt'), marker);

    const stopped = up;
    expect(await stopped.kill('SIGINT')).toBe(0);
    expect(stopped.output).toContain('flushing the 1 volume(s) csi-node staged');
    expect(stopped.output).toContain('1 volume(s) stay staged by csi-node');
    expect(stopped.output).toContain(`  ${volume.volume_id}  ${staging}`);
    // The marker reached the volume's one replica (a file in a pool) before the io-engines stopped.
    const replicas = (await readdir(join(cluster.home, 'storctl', 'nodes'), { recursive: true })).filter(
      (f) => f.endsWith('.img'),
    );
    const holding = [];
    for (const f of replicas)
      if ((await readFile(join(cluster.home, 'storctl', 'nodes', f))).includes(marker)) holding.push(f);
    expect(holding).toHaveLength(1);

    // The next up serves the staged volume again; unstaged, it is deleted.
    up = await cluster.start();
    const ctl2 = new CsiClient(csiControllerSocket);
    const node2 = new CsiClient(csiNodeSocket);
    try {
      expect(await readFile(join(staging, 'dirty.txt'), 'utf8')).toBe(marker);
      await node2.node('NodeUnstageVolume', { volume_id: volume.volume_id, staging_target_path: staging });
      await ctl2.controller('ControllerUnpublishVolume', { volume_id: volume.volume_id, node_id });
      await ctl2.controller('DeleteVolume', { volume_id: volume.volume_id });
    } finally {
      ctl2.close();
      node2.close();
    }
  }, 180_000);
});
