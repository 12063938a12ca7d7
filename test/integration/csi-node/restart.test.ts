import { execFile } from 'node:child_process';
import { mkdir, open, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { stageRequest } from '../../helpers/csi-client.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from '../core/cluster.js';
import { CsiNodeFixture } from './fixture.js';

const MiB = 1 << 20;
const exec = promisify(execFile);

const publishRequest = (o: { volumeId: string; staging: string; target: string }) => ({
  volume_id: o.volumeId,
  staging_target_path: o.staging,
  target_path: o.target,
  readonly: false,
  volume_capability: {
    mount: { fs_type: 'ext4', mount_flags: [] },
    access_mode: { mode: 'SINGLE_NODE_WRITER' },
  },
  publish_context: {},
  volume_context: {},
  secrets: {},
});

interface Stats {
  volume_condition: { abnormal: boolean; message: string };
}

interface StateFile {
  volumes: Record<
    string,
    { proxy: { pid: number }; device: { kind: string; device: string; file: string; fusePid: number } }
  >;
}

/** Write `text` to `path` and fsync it: on the volume's blocks before the next step. */
async function writeSynced(path: string, text: string): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await fh.writeFile(text);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** A staged volume outlives its csi-node (kill -9), a dead proxy is repaired, a new target is re-pointed to. */
describe('csi-node restarts and broken paths', () => {
  let cluster: TestCluster | undefined;
  let node: CsiNodeFixture | undefined;
  afterEach(async () => {
    await node?.dispose();
    await cluster?.stop();
    node = undefined;
    cluster = undefined;
  });

  async function setup(engines = 1, attacher?: 'nbdfuse-loop') {
    cluster = await TestCluster.start({ engines });
    node = new CsiNodeFixture(cluster.restUrl, { attacher });
    await node.start();
    const id = newVolumeId();
    const published = await cluster.createPublished(id, { size: 64 * MiB, replicas: 1, node: 'node-1' });
    const uri = published.state.target!.deviceUri;
    const staging = join(node.root, 'plugins', id, 'globalmount');
    const target = join(node.root, 'pods', 'pod-1', 'volumes', id, 'mount');
    await node.csi!.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
    await node.csi!.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target }));
    await writeSynced(join(target, 'before.txt'), 'written before\n');
    return { c: cluster, n: node, id, uri, staging, target };
  }

  const state = async (n: CsiNodeFixture) =>
    JSON.parse(await readFile(join(n.stateDir, 'state.json'), 'utf8')) as StateFile;

  it('kill -9 of csi-node while staged and written: the volume keeps serving, the restarted node serves it and unstages it cleanly', {
    timeout: 120_000,
  }, async () => {
    const { n, id, uri, staging, target } = await setup();
    const recorded = (await state(n)).volumes[id];
    await n.crash();
    // The path lives in its own processes: the filesystem answers while csi-node is down.
    await writeSynced(join(target, 'while-down.txt'), 'written while csi-node was dead\n');
    expect(await readFile(join(target, 'before.txt'), 'utf8')).toBe('written before\n');

    await n.start();
    expect(n.ready).toMatchObject({ volumes: 1, healthy: 1 });
    const stats = await n.csi!.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(stats.volume_condition.abnormal).toBe(false);
    // Repeats of what the CO already did are answered from the found state, not redone.
    await n.csi!.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
    await n.csi!.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target }));
    const again = (await state(n)).volumes[id];
    expect(again.device.device).toBe(recorded.device.device);
    expect(again.proxy.pid).toBe(recorded.proxy.pid);
    expect(await readFile(join(target, 'while-down.txt'), 'utf8')).toContain('while csi-node was dead');

    // A freeze whose freezer and csi-node both die is thawed by the restarted csi-node.
    await n.fs!.call('Freeze', { volume_id: id, timeout_ms: 1000 });
    await n.crash();
    await n.start();
    await waitFor(
      async () => !(await readFile(join(n.stateDir, 'state.json'), 'utf8')).includes('frozenUntil'),
      {
        what: 'self-thaw after the restart',
      },
    );
    await writeSynced(join(target, 'after-thaw.txt'), 'thawed\n');

    await n.csi!.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await n.csi!.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await n.leftovers()).toEqual([]);
  });

  // The proxy serves the FUSE file itself (fuse-loop, the default here): it dies, or the kernel's
  // FUSE connection to it is aborted. nbdfuse in front of the proxy is the other FUSE attacher.
  const victims = {
    proxy:
      /the path proxy \(pid \d+\) is gone: every I\/O on the volume fails on this node until it is staged again \(a repeated NodeStageVolume repairs it: restart the pods using it\)$/,
    'FUSE connection': /the path proxy no longer serves/,
    nbdfuse: /nbdfuse \(pid \d+\) is gone/,
  };
  for (const [victim, message] of Object.entries(victims))
    it(`a dead ${victim} shows as abnormal and a repeated stage + publish repairs the volume, data kept`, {
      timeout: 120_000,
    }, async () => {
      const { n, id, uri, staging, target } = await setup(
        1,
        victim === 'nbdfuse' ? 'nbdfuse-loop' : undefined,
      );
      const before = (await state(n)).volumes[id];
      expect(before.device.kind).toBe(victim === 'nbdfuse' ? 'nbdfuse-loop' : 'fuse-loop');
      if (victim === 'FUSE connection') {
        // The FUSE connection's number is the minor of the mount's anonymous device; its abort file
        // is in fusectl, mounted for this test in the fixture's dir (the host's may not be mounted).
        const dev = (await stat(before.device.file)).dev;
        const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
        const fusectl = join(n.dir, 'fusectl');
        await mkdir(fusectl);
        await exec('mount', ['-t', 'fusectl', 'fusectl', fusectl]);
        try {
          await writeFile(join(fusectl, String(minor), 'abort'), '1');
        } finally {
          await exec('umount', [fusectl]);
        }
      } else process.kill(victim === 'proxy' ? before.proxy.pid : before.device.fusePid, 'SIGKILL');
      const stats = await waitFor(
        async () => {
          const s = await n.csi!.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: staging });
          return s.volume_condition.abnormal ? s : null;
        },
        { what: 'abnormal volume condition' },
      );
      expect(stats.volume_condition.message).toMatch(message);
      // A publish on a broken staging is refused rather than reported as done.
      await expect(
        n.csi!.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target: `${target}-2` })),
      ).rejects.toMatchObject({ code: 14 });

      await n.csi!.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
      await n.csi!.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target }));
      const after = (await state(n)).volumes[id];
      expect(after.proxy.pid).not.toBe(before.proxy.pid);
      expect(await readFile(join(target, 'before.txt'), 'utf8')).toBe('written before\n');
      await writeFile(join(target, 'after.txt'), 'after repair\n');
      const ok = await n.csi!.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
      expect(ok.volume_condition.abnormal).toBe(false);

      await n.csi!.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
      await n.csi!.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
      expect(await n.leftovers()).toEqual([]);
    });

  it('a crash between two recorded steps: what the state file does not know is still found and undone', {
    timeout: 120_000,
  }, async () => {
    const { n, id, staging, target } = await setup();
    await n.csi!.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await n.crash();
    // As if csi-node had died right after starting the proxy and nbdfuse, before recording them.
    const file = join(n.stateDir, 'state.json');
    const raw = JSON.parse(await readFile(file, 'utf8'));
    const rec = raw.volumes[id];
    delete rec.proxy;
    delete rec.device;
    rec.staged = false;
    await writeFile(file, JSON.stringify(raw));
    await n.start();
    expect(n.ready).toMatchObject({ volumes: 1, healthy: 0 });
    await n.csi!.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await n.leftovers()).toEqual([]);
  });

  it('a new target (the volume republished on another node) is re-pointed to while the filesystem stays mounted', {
    timeout: 120_000,
  }, async () => {
    const { c, n, id, staging, target } = await setup(2);
    const before = (await state(n)).volumes[id];
    await c.rest.unpublishVolume(id);
    // The target is gone: the volume's condition says the path is down (the proxy keeps retrying).
    const down = await waitFor(
      async () => {
        const s = await n.csi!.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
        return s.volume_condition.abnormal ? s : null;
      },
      { what: 'path down' },
    );
    expect(down.volume_condition.message).toMatch(/no path to nbd:\/\/.*reconnecting/);
    const moved = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-2' });
    const uri2 = moved.state.target!.deviceUri;
    await n.csi!.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri: uri2 }));
    const after = (await state(n)).volumes[id] as unknown as { target: string; device: { device: string } };
    expect(after.target).toBe(uri2);
    expect(after.device.device).toBe(before.device.device); // same device, same mount
    await writeSynced(join(target, 'after-move.txt'), 'written through the new target\n');
    expect(await readFile(join(target, 'before.txt'), 'utf8')).toBe('written before\n');
    const stats = await n.csi!.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(stats.volume_condition).toMatchObject({ abnormal: false });
    expect(stats.volume_condition.message).toContain(uri2);

    await n.csi!.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await n.csi!.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await n.leftovers()).toEqual([]);
  });

  it('ext4 gone read-only after errors: reported abnormal, a repeated stage + publish repairs it (e2fsck), data kept', {
    timeout: 120_000,
  }, async () => {
    const { n, id, uri, staging, target } = await setup();
    // What ext4 does after I/O errors (its journal aborted when its path was down past the
    // timeout), made to happen at once: an error reported through the filesystem's own sysfs knob.
    const device = (await state(n)).volumes[id].device.device;
    await exec('mount', ['-o', 'remount,errors=remount-ro', staging]);
    await writeFile(`/sys/fs/ext4/${device.replace('/dev/', '')}/trigger_fs_error`, 'storctl test\n');
    const ro = await n.csi!.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(ro.volume_condition.abnormal).toBe(true);
    expect(ro.volume_condition.message).toContain(`the ext4 filesystem at ${staging} went read-only`);
    await expect(writeFile(join(target, 'refused.txt'), 'x')).rejects.toMatchObject({ code: 'EROFS' });
    // A new publish of a broken volume is refused until it is staged again.
    await expect(
      n.csi!.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target: `${target}-2` })),
    ).rejects.toMatchObject({ code: 14 });

    await n.csi!.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
    await n.csi!.node('NodePublishVolume', publishRequest({ volumeId: id, staging, target }));
    const stats = await n.csi!.node<Stats>('NodeGetVolumeStats', { volume_id: id, volume_path: target });
    expect(stats.volume_condition.abnormal).toBe(false);
    expect(await readFile(join(target, 'before.txt'), 'utf8')).toBe('written before\n');
    await writeSynced(join(target, 'after.txt'), 'written after the repair\n');
    // e2fsck cleared the error the filesystem recorded.
    const { stdout } = await exec('dumpe2fs', ['-h', (await state(n)).volumes[id].device.device]);
    expect(stdout).toMatch(/^Filesystem state:\s+clean$/m);

    await n.csi!.node('NodeUnpublishVolume', { volume_id: id, target_path: target });
    await n.csi!.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    expect(await n.leftovers()).toEqual([]);
  });
});
