import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CsiClient, stageRequest } from '../../helpers/csi-client.js';
import type { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { TestCluster } from '../core/cluster.js';
import { CsiNodeFixture } from '../csi-node/fixture.js';
import {
  type CsiSnapshot,
  type CsiVolume,
  createRequest,
  MiB,
  mountCap,
  startController,
} from './fixture.js';

/**
 * The controller with the real csi-node, the whole way a CO drives them: the node registers itself
 * with core (app node), the controller publishes to it, the node stages ext4 over NBD and publishes
 * it into a pod's directory, and a snapshot with quiesceFs=freeze goes through the node's NodeFs
 * service. A file written without any sync is
 * in the snapshot (the freeze flushed it), and a clone of the snapshot staged on the same node reads
 * it back. A second case grows a pod-mounted volume online, controller first, then node.
 */
describe('csi-controller with the csi-node', () => {
  let cluster: TestCluster;
  let node: CsiNodeFixture;
  let proc: StorctlProcess;
  let ctl: CsiClient;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-csi-e2e-'));
    cluster = await TestCluster.start({ engines: 2 });
    const started = await startController(dir, cluster.restUrl, cluster.env);
    proc = started.proc;
    ctl = new CsiClient(started.socket);
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    // Both cases begin where a CO would: the node has registered itself with core.
    await waitFor(() => cluster.rest.getAppNode('csi-node-1').catch(() => null), {
      what: 'csi-node registered as an app node',
    });
  }, 120_000);

  /** CreateSnapshot with quiesceFs=freeze: the controller freezes the staged filesystem through the node. */
  const frozenSnapshot = async (volumeId: string) =>
    (
      await ctl.controller<{ snapshot: CsiSnapshot }>('CreateSnapshot', {
        source_volume_id: volumeId,
        name: `snapshot-${randomUUID()}`,
        parameters: { quiesceFs: 'freeze' },
      })
    ).snapshot;

  afterAll(async () => {
    ctl?.close();
    await proc?.kill('SIGTERM');
    await node?.dispose();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('publish → stage → pod publish → write → snapshot with freeze → clone → stage the clone and read it back; nothing left', {
    timeout: 120_000,
  }, async () => {
    const csiNode = node.csi!;
    const create = (req: unknown) => ctl.controller<{ volume: CsiVolume }>('CreateVolume', req);
    const publish = (id: string) =>
      ctl.controller<{ publish_context: { uri: string } }>('ControllerPublishVolume', {
        volume_id: id,
        node_id: 'csi-node-1',
        volume_capability: mountCap(),
        readonly: false,
      });
    const stagingOf = (id: string) => join(node.root, 'plugins', id, 'globalmount');

    const id = (
      await create(createRequest(`pvc-${randomUUID()}`, { required: 64 * MiB, parameters: { repl: '2' } }))
    ).volume.volume_id;
    const { publish_context } = await publish(id);
    await csiNode.node(
      'NodeStageVolume',
      stageRequest({ volumeId: id, staging: stagingOf(id), uri: publish_context.uri }),
    );
    // The pod's view: published from the staging mount; what the application writes there is the
    // volume's.
    const target = join(node.root, 'pods', randomUUID(), 'volumes', 'kubernetes.io~csi', id, 'mount');
    await csiNode.node('NodePublishVolume', {
      volume_id: id,
      staging_target_path: stagingOf(id),
      target_path: target,
      volume_capability: mountCap(),
      readonly: false,
      publish_context,
      volume_context: {},
    });
    const text = `written at ${new Date().toISOString()}, never synced\n`;
    await writeFile(join(target, 'data.txt'), text);

    const snapshot = await frozenSnapshot(id);
    expect(snapshot.ready_to_use).toBe(true);
    // The node froze and thawed the filesystem: its own log says so, for this volume.
    await waitFor(() => /"frozen"/.test(node.proc!.output) && /"thawed"/.test(node.proc!.output), {
      what: 'the csi-node logged frozen and thawed',
    });
    const nodeLog = node
      .proc!.output.split('\n')
      .filter((l) => l.includes(id) && /"(frozen|thawed)"/.test(l))
      .map((l) => JSON.parse(l).msg);
    expect(nodeLog).toEqual(['frozen', 'thawed']);

    const clone = (
      await create(
        createRequest(`pvc-${randomUUID()}`, {
          source: { snapshot: { snapshot_id: snapshot.snapshot_id } },
          parameters: { repl: '2' },
        }),
      )
    ).volume.volume_id;
    const cloneCtx = await publish(clone);
    await csiNode.node(
      'NodeStageVolume',
      stageRequest({ volumeId: clone, staging: stagingOf(clone), uri: cloneCtx.publish_context.uri }),
    );
    expect(await readFile(join(stagingOf(clone), 'data.txt'), 'utf8')).toBe(text);

    await csiNode.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    for (const v of [clone, id]) {
      await csiNode.node('NodeUnstageVolume', { volume_id: v, staging_target_path: stagingOf(v) });
      await ctl.controller('ControllerUnpublishVolume', { volume_id: v, node_id: 'csi-node-1' });
    }
    await ctl.controller('DeleteVolume', { volume_id: clone });
    await ctl.controller('DeleteSnapshot', { snapshot_id: snapshot.snapshot_id });
    await ctl.controller('DeleteVolume', { volume_id: id });
    expect(await cluster.rest.listVolumes()).toEqual([]);
    expect(await node.leftovers()).toEqual([]);
  });

  it('xfs: grows a pod-mounted volume online as the CO does (ControllerExpandVolume, then NodeExpandVolume); its clone stages beside it', {
    timeout: 120_000,
  }, async () => {
    const csiNode = node.csi!;
    // xfs: ext4 grows online only with CAP_SYS_RESOURCE, which root here lacks (csi-node then
    // answers FAILED_PRECONDITION and grows it at the next stage).
    const cap = mountCap('SINGLE_NODE_WRITER', 'xfs');
    const id = (
      await ctl.controller<{ volume: CsiVolume }>(
        'CreateVolume',
        createRequest(`pvc-${randomUUID()}`, {
          required: 320 * MiB,
          parameters: { repl: '2', thin: 'true' },
          caps: [cap],
        }),
      )
    ).volume.volume_id;
    const { publish_context } = await ctl.controller<{ publish_context: { uri: string } }>(
      'ControllerPublishVolume',
      { volume_id: id, node_id: 'csi-node-1', volume_capability: cap, readonly: false },
    );
    const staging = join(node.root, 'plugins', id, 'globalmount');
    await csiNode.node(
      'NodeStageVolume',
      stageRequest({ volumeId: id, staging, uri: publish_context.uri, fsType: 'xfs' }),
    );
    const target = join(node.root, 'pods', randomUUID(), 'volumes', 'kubernetes.io~csi', id, 'mount');
    await csiNode.node('NodePublishVolume', {
      volume_id: id,
      staging_target_path: staging,
      target_path: target,
      volume_capability: cap,
      readonly: false,
      publish_context,
      volume_context: {},
    });
    const text = 'kept across online growth\n';
    await writeFile(join(target, 'data.txt'), text);
    // Online expansion while the pod has it mounted: the controller grows the volume, the node the
    // filesystem, as the CO calls them.
    const before = await statfs(target);
    const grown = await ctl.controller<{ capacity_bytes: string; node_expansion_required: boolean }>(
      'ControllerExpandVolume',
      { volume_id: id, capacity_range: { required_bytes: String(512 * MiB) }, volume_capability: cap },
    );
    expect(grown).toEqual({ capacity_bytes: String(512 * MiB), node_expansion_required: true });
    await waitFor(async () => (await cluster.rest.getVolume(id)).state.target?.size === 512 * MiB, {
      what: 'the target at 512 MiB',
    });
    const nodeGrown = await csiNode.node<{ capacity_bytes: string }>('NodeExpandVolume', {
      volume_id: id,
      volume_path: target,
      capacity_range: { required_bytes: String(512 * MiB) },
    });
    expect(Number(nodeGrown.capacity_bytes)).toBe(512 * MiB);
    const after = await statfs(target);
    expect(after.blocks * after.bsize).toBeGreaterThan(before.blocks * before.bsize + 150 * MiB);
    expect(await readFile(join(target, 'data.txt'), 'utf8')).toBe(text);

    // A clone of it staged beside it on the same node: the clone's xfs has its source's UUID.
    const snapshot = await frozenSnapshot(id);
    const clone = (
      await ctl.controller<{ volume: CsiVolume }>(
        'CreateVolume',
        createRequest(`pvc-${randomUUID()}`, {
          source: { snapshot: { snapshot_id: snapshot.snapshot_id } },
          parameters: { repl: '2', thin: 'true' },
          caps: [cap],
        }),
      )
    ).volume.volume_id;
    const cloneCtx = await ctl.controller<{ publish_context: { uri: string } }>('ControllerPublishVolume', {
      volume_id: clone,
      node_id: 'csi-node-1',
      volume_capability: cap,
      readonly: false,
    });
    const cloneStaging = join(node.root, 'plugins', clone, 'globalmount');
    await csiNode.node(
      'NodeStageVolume',
      stageRequest({
        volumeId: clone,
        staging: cloneStaging,
        uri: cloneCtx.publish_context.uri,
        fsType: 'xfs',
      }),
    );
    expect(await readFile(join(cloneStaging, 'data.txt'), 'utf8')).toBe(text);

    await csiNode.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    for (const [v, path] of [
      [clone, cloneStaging],
      [id, staging],
    ]) {
      await csiNode.node('NodeUnstageVolume', { volume_id: v, staging_target_path: path });
      await ctl.controller('ControllerUnpublishVolume', { volume_id: v, node_id: 'csi-node-1' });
    }
    await ctl.controller('DeleteVolume', { volume_id: clone });
    await ctl.controller('DeleteSnapshot', { snapshot_id: snapshot.snapshot_id });
    await ctl.controller('DeleteVolume', { volume_id: id });
    expect(await node.leftovers()).toEqual([]);
  });
});
