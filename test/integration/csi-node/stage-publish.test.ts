import { execFile } from 'node:child_process';
import { open, readdir, readFile, stat, statfs, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { stageRequest } from '../../helpers/csi-client.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from '../core/cluster.js';
import { qemuIo } from '../core/qemu.js';
import { CsiNodeFixture } from './fixture.js';

const MiB = 1 << 20;
const exec = promisify(execFile);

const publishRequest = (o: {
  volumeId: string;
  staging: string;
  target: string;
  readonly?: boolean;
  fsType?: string;
}) => ({
  volume_id: o.volumeId,
  staging_target_path: o.staging,
  target_path: o.target,
  readonly: o.readonly ?? false,
  volume_capability: {
    mount: { fs_type: o.fsType ?? 'ext4', mount_flags: [] },
    access_mode: { mode: 'SINGLE_NODE_WRITER' },
  },
  publish_context: {},
  volume_context: {},
  secrets: {},
});

interface Stats {
  usage: { unit: string; total: string; available: string; used: string }[];
  volume_condition: { abnormal: boolean; message: string };
}

/**
 * The csi-node end to end on real mounts: a volume of a real cluster (io-engine NBD target) staged
 * through the path proxy (serving a FUSE file) → loop device → ext4 / xfs, bind-published, written, unstaged,
 * staged again and read back, frozen, grown online; nothing of ours is left afterwards.
 */
describe('csi-node stage / publish on real filesystems', () => {
  let cluster: TestCluster | undefined;
  let node: CsiNodeFixture | undefined;
  afterEach(async () => {
    await node?.dispose();
    await cluster?.stop();
    node = undefined;
    cluster = undefined;
  });

  it('stages, publishes, writes, unstages, stages again and reads back; freeze; stats; nothing left', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ engines: 1 });
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    const csi = node.csi!;

    // Registered with core as an app node, with its NodeFs endpoint.
    const app = await waitFor(
      () =>
        cluster!.rest.call<{ spec: { endpoint: string } }>('GET', '/app-nodes/csi-node-1').catch(() => null),
      { what: 'app node registered' },
    );
    expect(app.spec.endpoint).toBe(node.ready.fsEndpoint);
    const info = await csi.node<{ node_id: string; max_volumes_per_node: string }>('NodeGetInfo');
    expect(info.node_id).toBe('csi-node-1');
    const caps = await csi.node<{ capabilities: { rpc: { type: string } }[] }>('NodeGetCapabilities');
    expect(caps.capabilities.map((c) => c.rpc.type).sort()).toEqual([
      'EXPAND_VOLUME',
      'GET_VOLUME_STATS',
      'STAGE_UNSTAGE_VOLUME',
      'VOLUME_CONDITION',
    ]);

    const id = newVolumeId();
    const published = await cluster.createPublished(id, { size: 64 * MiB, replicas: 1, node: 'node-1' });
    const uri = published.state.target!.deviceUri;
    const staging = join(node.root, 'plugins', id, 'globalmount');
    const target = join(node.root, 'pods', 'pod-1', 'volumes', id, 'mount');

    // Two stages at once: one does the work, the other is ABORTED (the CO retries it).
    const both = await Promise.allSettled([
      csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri })),
      csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri })),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(both.find((r) => r.status === 'rejected')).toMatchObject({ reason: { code: 10 } });
    await csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri })); // idempotent
    // What csi-node keeps is its own: state file and sockets 0600, directories 0700.
    const vdir = join(node.stateDir, 'v', (await readdir(join(node.stateDir, 'v')))[0]);
    for (const [path, mode] of [
      [node.socket, 0o600],
      [join(node.stateDir, 'state.json'), 0o600],
      [node.stateDir, 0o700],
      [vdir, 0o700],
      [join(vdir, 'nbd.sock'), 0o600],
      [join(vdir, 'ctl.sock'), 0o600],
    ] as const)
      expect((await stat(path)).mode & 0o777, path).toBe(mode);
    // The proxy serves the loop device's file, and the loop device passes 1 MiB requests on whole.
    const rec = JSON.parse(await readFile(join(node.stateDir, 'state.json'), 'utf8')).volumes[id];
    expect(rec.device).toMatchObject({ kind: 'fuse-loop', file: join(vdir, basename(vdir)) });
    // The proxy is the volume's data path: the OOM killer must not pick it (it would take the
    // filesystem with it). That takes CAP_SYS_RESOURCE, which a privileged node plugin has; where
    // root runs without it (a container), the proxy says so in its log. Before: neither.
    const sysResource =
      (BigInt(`0x${/CapEff:\s+([0-9a-f]+)/.exec(await readFile('/proc/self/status', 'utf8'))![1]}`) >> 24n) &
      1n;
    if (sysResource)
      expect((await readFile(`/proc/${rec.proxy.pid}/oom_score_adj`, 'utf8')).trim()).toBe('-1000');
    else
      expect(await readFile(join(vdir, 'proxy.log'), 'utf8')).toContain(
        'the OOM killer may end this proxy, and the volume with it',
      );
    const queue = `/sys/block/${basename(rec.device.device)}/queue`;
    const hw = Number(await readFile(`${queue}/max_hw_sectors_kb`, 'utf8'));
    expect(Number(await readFile(`${queue}/max_sectors_kb`, 'utf8'))).toBe(Math.min(hw, 1024));
    await expect(
      csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri, fsType: 'xfs' })),
    ).rejects.toMatchObject({ code: 6 }); // ALREADY_EXISTS: staged with ext4
    await csi.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target }));
    await csi.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target })); // idempotent
    await writeFile(join(target, 'hello.txt'), 'written through the proxy, its FUSE file, loop and ext4\n');

    const stats = await csi.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(stats.volume_condition.abnormal).toBe(false);
    const bytes = stats.usage.find((u) => u.unit === 'BYTES')!;
    expect(Number(bytes.total)).toBeGreaterThan(40 * MiB);
    expect(Number(bytes.total)).toBeLessThanOrEqual(64 * MiB);
    expect(stats.usage.find((u) => u.unit === 'INODES')).toBeDefined();

    // Freeze through NodeFs; Unfreeze reports it was frozen; a forgotten freeze thaws by itself.
    await node.fs!.call('Freeze', { volume_id: id, timeout_ms: 30_000 });
    expect(await node.fs!.call('Unfreeze', { volume_id: id })).toEqual({ was_frozen: true });
    await node.fs!.call('Freeze', { volume_id: id, timeout_ms: 300 });
    await waitFor(
      async () =>
        (await readFile(join(node!.stateDir, 'state.json'), 'utf8')).includes('frozenUntil') === false,
      {
        what: 'self-thaw',
      },
    );
    expect(await node.fs!.call('Unfreeze', { volume_id: id })).toEqual({ was_frozen: false });
    await expect(node.fs!.call('Freeze', { volume_id: newVolumeId() })).rejects.toMatchObject({ code: 5 });

    // A publish whose bind mount vanished is reported, and a repeated publish binds it again.
    await exec('umount', [target]);
    const gone = await csi.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(gone.volume_condition).toEqual({ abnormal: true, message: `${target} is not mounted` });
    await csi.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target }));
    expect(await readFile(join(target, 'hello.txt'), 'utf8')).toContain('written through the proxy');

    await csi.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await csi.node('NodeUnpublishVolume', { volume_id: id, target_path: target }); // idempotent
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
    await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging }); // idempotent
    expect(await node.leftovers()).toEqual([]);

    // Stage again: the filesystem is found (not formatted again) and the file is there; read-only publish.
    await csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
    await csi.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target, readonly: true }));
    expect(await readFile(join(target, 'hello.txt'), 'utf8')).toContain('written through the proxy');
    await expect(writeFile(join(target, 'nope.txt'), 'x')).rejects.toMatchObject({ code: 'EROFS' });
    await expect(
      csi.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target, readonly: false })),
    ).rejects.toMatchObject({ code: 6 });
    await csi.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await node.leftovers()).toEqual([]);
  });

  it('grows an xfs volume online: the device sees the new size without unstaging, data kept', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ engines: 1, poolCapacity: 2048 * MiB });
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    const csi = node.csi!;
    const id = newVolumeId();
    const published = await cluster.createPublished(id, { size: 320 * MiB, replicas: 1, node: 'node-1' });
    const uri = published.state.target!.deviceUri;
    const staging = join(node.root, 'plugins', id, 'globalmount');
    await csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri, fsType: 'xfs' }));
    await writeFile(join(staging, 'keep.txt'), 'kept across growth\n');
    const before = await statfs(staging);

    await cluster.rest.resizeVolume(id, 512 * MiB);
    await waitFor(async () => (await cluster!.rest.getVolume(id)).state.target?.size === 512 * MiB, {
      what: 'target at 512 MiB',
    });
    const res = await csi.node<{ capacity_bytes: string }>('NodeExpandVolume', {
      volume_id: id,
      volume_path: staging,
      capacity_range: { required_bytes: String(512 * MiB) },
    });
    expect(Number(res.capacity_bytes)).toBe(512 * MiB);
    const after = await statfs(staging);
    expect(after.blocks * after.bsize).toBeGreaterThan(before.blocks * before.bsize + 150 * MiB);
    expect(await readFile(join(staging, 'keep.txt'), 'utf8')).toBe('kept across growth\n');
    // Asking for more than the target has is OUT_OF_RANGE (the controller expands first).
    await expect(
      csi.node('NodeExpandVolume', {
        volume_id: id,
        volume_path: staging,
        capacity_range: { required_bytes: String(1024 * MiB) },
      }),
    ).rejects.toMatchObject({ code: 11 });

    // With its target gone (unpublished behind the node's back) the new size cannot be learnt:
    // UNAVAILABLE, which a CO retries, saying which target does not answer; the data stays.
    await cluster.rest.unpublishVolume(id);
    const down = await csi
      .node('NodeExpandVolume', {
        volume_id: id,
        volume_path: staging,
        capacity_range: { required_bytes: String(512 * MiB) },
      })
      .then(
        () => null,
        (e: { code: number; details: string }) => e,
      );
    expect(down?.code).toBe(14);
    expect(down?.details).toContain(`volume ${id}: its target ${uri} does not answer`);
    expect(down?.details).not.toMatch(/not found: export/);
    // Published again, a repeated stage re-points the path; the expansion then goes through.
    const again = await cluster.rest.publishVolume(id, {
      protocol: 'nbd',
      publish_context: {},
      node: 'node-1',
    });
    await csi.node(
      'NodeStageVolume',
      stageRequest({ volumeId: id, staging, uri: again.state.target!.deviceUri, fsType: 'xfs' }),
    );
    const res2 = await csi.node<{ capacity_bytes: string }>('NodeExpandVolume', {
      volume_id: id,
      volume_path: staging,
      capacity_range: { required_bytes: String(512 * MiB) },
    });
    expect(Number(res2.capacity_bytes)).toBe(512 * MiB);
    expect(await readFile(join(staging, 'keep.txt'), 'utf8')).toBe('kept across growth\n');

    await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await node.leftovers()).toEqual([]);
  });

  it('grows ext4: online where allowed, else the device grows at once and the filesystem at the next stage', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ engines: 1 });
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    const csi = node.csi!;
    const id = newVolumeId();
    const published = await cluster.createPublished(id, { size: 64 * MiB, replicas: 1, node: 'node-1' });
    const uri = published.state.target!.deviceUri;
    const staging = join(node.root, 'plugins', id, 'globalmount');
    await csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
    await writeFile(join(staging, 'keep.txt'), 'kept\n');
    const before = await statfs(staging);
    await cluster.rest.resizeVolume(id, 128 * MiB);
    await waitFor(async () => (await cluster!.rest.getVolume(id)).state.target?.size === 128 * MiB, {
      what: 'target at 128 MiB',
    });
    const expand = () =>
      csi.node('NodeExpandVolume', {
        volume_id: id,
        volume_path: staging,
        capacity_range: { required_bytes: String(128 * MiB) },
      });
    const online = await expand().then(
      () => true,
      (err: { code: number; details: string }) => {
        // This machine withholds CAP_SYS_RESOURCE (ext4's online resize ioctl needs it): said so, precisely.
        expect(err.code).toBe(9);
        expect(err.details).toMatch(/CAP_SYS_RESOURCE/);
        return false;
      },
    );
    if (!online) {
      await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
      await csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
    }
    const after = await statfs(staging);
    expect(after.blocks * after.bsize).toBeGreaterThan(before.blocks * before.bsize + 50 * MiB);
    expect(await readFile(join(staging, 'keep.txt'), 'utf8')).toBe('kept\n');
    await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await node.leftovers()).toEqual([]);
  });

  it('publishes a raw block volume as a device file and removes it on unpublish', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ engines: 1 });
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    const csi = node.csi!;
    const id = newVolumeId();
    const published = await cluster.createPublished(id, { size: 32 * MiB, replicas: 1, node: 'node-1' });
    const uri = published.state.target!.deviceUri;
    const staging = join(node.root, 'plugins', id, 'staging');
    const target = join(node.root, 'pods', 'pod-1', 'volumeDevices', id);
    const blockPublish = {
      volume_id: id,
      staging_target_path: staging,
      target_path: target,
      readonly: false,
      volume_capability: { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
    };
    await csi.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri, block: true }));
    await csi.node('NodePublishVolume', blockPublish);
    await csi.node('NodePublishVolume', blockPublish); // idempotent
    const data = Buffer.alloc(4096, 0x5a);
    const fh = await open(target, 'r+');
    try {
      await fh.write(data, 0, data.length, 8 * MiB);
      await fh.sync();
      const back = Buffer.alloc(4096);
      await fh.read(back, 0, back.length, 8 * MiB);
      expect(back.equals(data)).toBe(true);
    } finally {
      await fh.close();
    }
    const stats = await csi.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(stats.usage).toEqual([expect.objectContaining({ unit: 'BYTES', total: String(32 * MiB) })]);
    // Mount access on a volume staged for block access does not fit.
    await expect(
      csi.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target: `${target}-fs` })),
    ).rejects.toMatchObject({ code: 9 });
    await csi.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
    await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await node.leftovers()).toEqual([]);
  });

  it('says a volume whose pool filled up is abnormal, and why', { timeout: 120_000 }, async () => {
    cluster = await TestCluster.start({ engines: 1, poolCapacity: 40 * MiB });
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    const csi = node.csi!;
    // Another thin volume holds 24 of the pool's 40 MiB.
    const filler = newVolumeId();
    const fillerUri = (await cluster.createPublished(filler, { size: 24 * MiB, replicas: 1, node: 'node-1' }))
      .state.target!.deviceUri;
    await qemuIo(fillerUri, 'write -P 0x11 0 24M');
    const id = newVolumeId();
    const published = await cluster.createPublished(id, { size: 32 * MiB, replicas: 1, node: 'node-1' });
    const staging = join(node.root, 'plugins', id, 'staging');
    const target = join(node.root, 'pods', 'pod-1', 'volumeDevices', id);
    await csi.node(
      'NodeStageVolume',
      stageRequest({ volumeId: id, staging, uri: published.state.target!.deviceUri, block: true }),
    );
    await csi.node('NodePublishVolume', {
      volume_id: id,
      staging_target_path: staging,
      target_path: target,
      readonly: false,
      volume_capability: { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
    });
    const healthy = await csi.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(healthy.volume_condition.abnormal).toBe(false);
    // 24 MiB more do not fit the 16 left: the device's writes fail.
    await expect(
      exec('dd', ['if=/dev/urandom', `of=${target}`, 'bs=1M', 'count=24', 'oflag=direct'], {
        timeout: 60_000,
      }),
    ).rejects.toThrow();
    const stats = await csi.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(stats.volume_condition.abnormal).toBe(true);
    expect(stats.volume_condition.message).toMatch(
      /^writes failed for want of space at \S+: a pool holding the volume's replicas is full/,
    );
    await csi.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await csi.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await node.leftovers()).toEqual([]);
  });

  it('stages several volumes at once, each on its own loop device, and unstages them all', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ engines: 1 });
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    const csi = node.csi!;
    const vols = await Promise.all(
      [1, 2, 3, 4].map(async (i) => {
        const id = newVolumeId();
        const published = await cluster!.createPublished(id, { size: 32 * MiB, replicas: 1, node: 'node-1' });
        return {
          id,
          i,
          uri: published.state.target!.deviceUri,
          staging: join(node!.root, 'plugins', id, 'gm'),
        };
      }),
    );
    await Promise.all(
      vols.map((v) =>
        csi.node('NodeStageVolume', stageRequest({ volumeId: v.id, staging: v.staging, uri: v.uri })),
      ),
    );
    for (const v of vols) await writeFile(join(v.staging, 'id'), v.id);
    for (const v of vols) expect(await readFile(join(v.staging, 'id'), 'utf8')).toBe(v.id);
    const state = JSON.parse(await readFile(join(node.stateDir, 'state.json'), 'utf8'));
    const devices = vols.map((v) => state.volumes[v.id].device.device);
    expect(new Set(devices).size).toBe(vols.length);
    await Promise.all(
      vols.map((v) => csi.node('NodeUnstageVolume', { volume_id: v.id, staging_target_path: v.staging })),
    );
    expect(await node.leftovers()).toEqual([]);
  });
});
