import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageRequest } from '../../helpers/csi-client.js';
import { runStorctl } from '../../helpers/storctl.js';
import { CsiNodeFixture } from './fixture.js';

const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;

/**
 * Every path and input is checked at the boundary, before anything is attached or mounted: paths
 * confined to --root (no `..`, no symlink out, never /proc, /sys, /dev), a well-formed nbd:// target,
 * supported capabilities; the codes are the CSI spec's.
 */
describe('csi-node refuses bad input', () => {
  const node = new CsiNodeFixture();
  const uri = 'nbd://127.0.0.1:1/vol';
  let staging = '';

  beforeAll(async () => {
    await node.start();
    staging = join(node.root, 'plugins', 'v1', 'globalmount');
    mkdirSync(node.root, { recursive: true });
    symlinkSync('/etc', join(node.root, 'escape'));
  }, 60_000);
  afterAll(async () => {
    await node.dispose();
  });

  const stage = (over: Record<string, unknown>) =>
    node.csi!.node('NodeStageVolume', { ...stageRequest({ volumeId: 'v1', staging, uri }), ...over });

  it('confines staging and target paths to the roots', async () => {
    for (const path of [
      '/etc/kubelet/x',
      `${node.root}/../outside`,
      `${node.root}//double`,
      `${node.root}/trailing/`,
      'relative/path',
      '/proc/self/root',
      '/dev/shm/x',
      node.root,
      join(node.root, 'escape', 'x'),
    ]) {
      await expect(stage({ staging_target_path: path }), path).rejects.toMatchObject({
        code: INVALID_ARGUMENT,
      });
      await expect(
        node.csi!.node('NodeUnpublishVolume', { volume_id: 'v1', target_path: path }),
        path,
      ).rejects.toMatchObject({ code: INVALID_ARGUMENT });
    }
  });

  it('requires a well-formed request', async () => {
    await expect(stage({ volume_id: '' })).rejects.toMatchObject({ code: INVALID_ARGUMENT });
    await expect(stage({ staging_target_path: '' })).rejects.toMatchObject({ code: INVALID_ARGUMENT });
    await expect(stage({ volume_capability: null })).rejects.toMatchObject({ code: INVALID_ARGUMENT });
    await expect(stage({ publish_context: {} })).rejects.toMatchObject({ code: INVALID_ARGUMENT });
    await expect(stage({ publish_context: { uri: 'http://x/y' } })).rejects.toMatchObject({
      code: INVALID_ARGUMENT,
    });
    await expect(stage({ publish_context: { uri: 'nbd://127.0.0.1:1/' } })).rejects.toMatchObject({
      code: INVALID_ARGUMENT,
    });
    const cap = (mount: object, mode = 'SINGLE_NODE_WRITER') => ({
      volume_capability: { mount, access_mode: { mode } },
    });
    await expect(stage(cap({ fs_type: 'btrfs' }))).rejects.toMatchObject({ code: INVALID_ARGUMENT });
    await expect(stage(cap({ fs_type: 'ext4', mount_flags: ['bind'] }))).rejects.toMatchObject({
      code: INVALID_ARGUMENT,
    });
    await expect(stage(cap({ fs_type: 'ext4', mount_flags: ['ro,remount'] }))).rejects.toMatchObject({
      code: INVALID_ARGUMENT,
    });
    // Found by the fuzzer: an option the kernel does not know failed in mount(8) as INTERNAL.
    for (const flag of ['NaN', 'data=bogus', 'nouuid']) {
      await expect(stage(cap({ fs_type: 'ext4', mount_flags: ['noatime', flag] }))).rejects.toMatchObject({
        code: INVALID_ARGUMENT,
        details: expect.stringContaining(`mount flag '${flag}'`),
      });
    }
    await expect(stage(cap({ fs_type: 'ext4' }, 'MULTI_NODE_MULTI_WRITER'))).rejects.toMatchObject({
      code: INVALID_ARGUMENT,
    });
  });

  it('answers the spec codes for volumes that are not there', async () => {
    // The target does not answer: the volume cannot be reached from here, and nothing is left behind.
    await expect(stage({})).rejects.toMatchObject({ code: NOT_FOUND });
    expect(await node.leftovers()).toEqual([]);
    await node.csi!.node('NodeUnstageVolume', { volume_id: 'v1', staging_target_path: staging });
    await node.csi!.node('NodeUnpublishVolume', {
      volume_id: 'v1',
      target_path: join(node.root, 'pods', 't'),
    });
    await expect(
      node.csi!.node('NodePublishVolume', {
        volume_id: 'v1',
        staging_target_path: staging,
        target_path: join(node.root, 'pods', 't'),
        volume_capability: { mount: { fs_type: 'ext4' }, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
        readonly: false,
      }),
    ).rejects.toMatchObject({ code: FAILED_PRECONDITION });
    await expect(
      node.csi!.node('NodeGetVolumeStats', { volume_id: 'v1', volume_path: staging }),
    ).rejects.toMatchObject({ code: NOT_FOUND });
    await expect(
      node.csi!.node('NodeExpandVolume', { volume_id: 'v1', volume_path: staging }),
    ).rejects.toMatchObject({ code: NOT_FOUND });
    await expect(node.fs!.call('Freeze', { volume_id: 'v1' })).rejects.toMatchObject({ code: NOT_FOUND });
    await expect(node.fs!.call('Freeze', { volume_id: '' })).rejects.toMatchObject({
      code: INVALID_ARGUMENT,
    });
  });

  it('refuses bad flags with exit 2 before starting anything', async () => {
    const base = ['daemon', 'csi-node', '--state-dir', join(node.dir, 'flags-state')];
    for (const extra of [
      ['--endpoint', 'tcp://127.0.0.1:1'],
      ['--endpoint', `unix://${join(node.dir, 'x.sock')}`, '--root', 'relative/dir'],
      ['--endpoint', `unix://${join(node.dir, 'x.sock')}`, '--root', '/a/../b'],
      ['--endpoint', `unix://${join(node.dir, 'x.sock')}`, '--fs-listen', 'nope'],
      ['--endpoint', `unix://${join(node.dir, 'x.sock')}`, '--path-timeout', 'soon'],
      ['--endpoint', `unix://${join(node.dir, 'x.sock')}`, '--rest', 'ftp://x'],
    ]) {
      const r = await runStorctl([...base, ...extra]);
      expect(r.code, `${extra.join(' ')}: ${r.stderr}`).toBe(2);
    }
    const help = await runStorctl(['daemon', 'csi-node', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('EXAMPLES');
  }, 60_000);
});
