import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MounterDaemon } from '../../../src/daemons/mounter/index.js';
import { probePath } from '../../../src/lib/mount/health.js';
import { mountsAt, readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { targetId } from '../../../src/lib/mount/unit-name.js';
import { type CsiClient, publishRequest } from '../../helpers/csi-client.js';
import { S3RVER_KEYS } from '../../helpers/s3.js';
import { waitFor } from '../../helpers/wait.js';
import {
  BUCKET,
  cleanupRoot,
  type Env,
  fuseProcessesBelow,
  makeEnv,
  mountsBelow,
  startMounter,
  targetPath,
} from './fixture.js';

let env: Env;
let daemon: MounterDaemon;
let csi: CsiClient;

beforeAll(async () => {
  env = await makeEnv('storctl-procmnt');
  ({ daemon, csi } = await startMounter(env));
});

afterAll(async () => {
  csi?.close();
  await daemon?.stop();
  await env?.s3.stop();
  if (env) await cleanupRoot(env.root);
});

const mountAt = async (t: string) =>
  mountsAt(await readMountTable(), t).find((m) => m.fsType === 'fuse.s3fs');

describe('S3 mounter with the process mounter (s3fs, s3rver)', () => {
  it('answers Identity and NodeGetInfo / NodeGetCapabilities; socket dir is 0700', async () => {
    const info = await csi.identity<{ name: string; vendor_version: string }>('GetPluginInfo');
    expect(info.name).toBe('s3.csi.storctl.io');
    expect(await csi.identity('Probe')).toMatchObject({ ready: { value: true } });
    expect(await csi.node('NodeGetInfo')).toMatchObject({ node_id: 'node-1' });
    expect(await csi.node('NodeGetCapabilities')).toEqual({ capabilities: [] });
    expect((await stat(join(env.root, 'sock'))).mode & 0o777).toBe(0o700);
    await expect(csi.node('NodeStageVolume', {})).rejects.toMatchObject({ code: status.UNIMPLEMENTED });
  });

  it('publishes, writes land in the bucket, republish is idempotent, unpublish cleans everything', async () => {
    const target = targetPath(env, 'pod-a', 'pv-a');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-a', target, bucket: BUCKET }));
    const m = await mountAt(target);
    expect(m).toBeDefined();
    await writeFile(join(target, 'hello.txt'), 'hello from storctl');
    await waitFor(async () => (await env.s3.readObject(BUCKET, 'hello.txt')) === 'hello from storctl', {
      what: 'object in bucket',
    });

    // Republish: same mount (same mount id), credentials rewritten in place, no second daemon.
    const credFile = join(env.stateDir, 'credentials', `${targetId(target)}.passwd-s3fs`);
    const before = await stat(credFile);
    expect(before.mode & 0o777).toBe(0o600);
    expect((await stat(join(env.stateDir, 'credentials'))).mode & 0o777).toBe(0o700);
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-a', target, bucket: BUCKET }));
    expect((await mountAt(target))?.id).toBe(m!.id);
    expect((await stat(credFile)).ino).not.toBe(before.ino);
    expect((await fuseProcessesBelow(env.root)).filter((p) => p.argv[2] === target)).toHaveLength(1);

    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-a', target_path: target });
    expect(await mountAt(target)).toBeUndefined();
    expect(existsSync(target)).toBe(false);
    expect(existsSync(credFile)).toBe(false);
    expect((await fuseProcessesBelow(env.root)).filter((p) => p.argv[2] === target)).toHaveLength(0);
    // Unpublish of something not mounted is success.
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-a', target_path: target });
  });

  it('per-volume secrets: refreshed in place on republish, never in argv or env', async () => {
    const target = targetPath(env, 'pod-s', 'pv-s');
    const secrets = { access_key_id: S3RVER_KEYS.accessKeyId, secret_access_key: 'first-secret' };
    await csi.node(
      'NodePublishVolume',
      publishRequest({
        volumeId: 'pv-s',
        target,
        bucket: BUCKET,
        context: { authenticationSource: 'secret' },
        secrets,
      }),
    );
    const credFile = join(env.stateDir, 'credentials', `${targetId(target)}.passwd-s3fs`);
    expect(await readFile(credFile, 'utf8')).toBe('S3RVER:first-secret\n');
    const mountId = (await mountAt(target))!.id;
    await csi.node(
      'NodePublishVolume',
      publishRequest({
        volumeId: 'pv-s',
        target,
        bucket: BUCKET,
        context: { authenticationSource: 'secret' },
        secrets: { ...secrets, secret_access_key: 'rotated-secret' },
      }),
    );
    expect(await readFile(credFile, 'utf8')).toBe('S3RVER:rotated-secret\n');
    expect((await mountAt(target))!.id).toBe(mountId);
    const proc = (await fuseProcessesBelow(env.root)).find((p) => p.argv[2] === target)!;
    expect(proc.argv.join(' ')).not.toContain('rotated-secret');
    expect(await readFile(`/proc/${proc.pid}/environ`, 'utf8')).not.toContain('secret');
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-s', target_path: target });
    expect(existsSync(credFile)).toBe(false);
  });

  it('readonly publish refuses writes', async () => {
    const target = targetPath(env, 'pod-ro', 'pv-ro');
    await csi.node(
      'NodePublishVolume',
      publishRequest({ volumeId: 'pv-ro', target, bucket: BUCKET, mode: 'MULTI_NODE_READER_ONLY' }),
    );
    await expect(writeFile(join(target, 'nope.txt'), 'x')).rejects.toMatchObject({ code: 'EROFS' });
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-ro', target_path: target });
  });

  it('kill -9 of s3fs: republish finds the corrupted mount (ENOTCONN), unmounts it and mounts fresh', async () => {
    const target = targetPath(env, 'pod-k', 'pv-k');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-k', target, bucket: BUCKET }));
    const proc = (await fuseProcessesBelow(env.root)).find((p) => p.argv[2] === target)!;
    process.kill(proc.pid, 'SIGKILL');
    await waitFor(async () => (await probePath(target)).state === 'corrupted', {
      what: 'ENOTCONN at target',
    });
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-k', target, bucket: BUCKET }));
    expect((await probePath(target)).state).toBe('ok');
    expect(mountsAt(await readMountTable(), target)).toHaveLength(1);
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-k', target_path: target });
    expect(existsSync(target)).toBe(false);
  });

  it('a restart of the mounter leaves mounts untouched; republish reuses them', async () => {
    const target = targetPath(env, 'pod-r', 'pv-r');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-r', target, bucket: BUCKET }));
    const mountId = (await mountAt(target))!.id;
    const pid = (await fuseProcessesBelow(env.root)).find((p) => p.argv[2] === target)!.pid;
    csi.close();
    await daemon.stop();
    expect((await mountAt(target))?.id).toBe(mountId);
    ({ daemon, csi } = await startMounter(env));
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-r', target, bucket: BUCKET }));
    expect((await mountAt(target))?.id).toBe(mountId);
    expect(
      (await fuseProcessesBelow(env.root)).filter((p) => p.argv[2] === target).map((p) => p.pid),
    ).toEqual([pid]);
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-r', target_path: target });
    expect(existsSync(target)).toBe(false);
  });

  it('a failing mount returns INTERNAL with the FUSE daemon output, and leaves nothing behind', async () => {
    const target = targetPath(env, 'pod-f', 'pv-f');
    const err = await csi
      .node('NodePublishVolume', publishRequest({ volumeId: 'pv-f', target, bucket: 'no-such-bucket' }))
      .catch((e) => e);
    expect(err.code).toBe(status.INTERNAL);
    expect(err.details).toMatch(/FUSE daemon output: .*(bucket|not found|CRT)/i);
    expect(existsSync(target)).toBe(false);
    expect(await readdir(join(env.stateDir, 'credentials'))).toEqual([]);
    expect(await mountsBelow(env.root)).toEqual([]);
  });

  it('50 volumes published concurrently and unpublished: no leftovers', async () => {
    const targets = Array.from({ length: 50 }, (_, i) => targetPath(env, `pod-c${i}`, `pv-c${i}`));
    await Promise.all(
      targets.map((t, i) =>
        csi.node('NodePublishVolume', publishRequest({ volumeId: `pv-c${i}`, target: t, bucket: BUCKET })),
      ),
    );
    expect((await mountsBelow(env.root)).filter((m) => m.fsType === 'fuse.s3fs')).toHaveLength(50);
    await Promise.all(
      targets.map((t, i) => csi.node('NodeUnpublishVolume', { volume_id: `pv-c${i}`, target_path: t })),
    );
    expect(await mountsBelow(env.root)).toEqual([]);
    await waitFor(async () => (await fuseProcessesBelow(env.root)).length === 0, { what: 'daemons to end' });
    expect(await readdir(join(env.stateDir, 'credentials'))).toEqual([]);
    expect(JSON.parse(await readFile(join(env.stateDir, 'mounts.json'), 'utf8')).mounts).toEqual({});
    for (const t of targets) expect(existsSync(t)).toBe(false);
    execFileSync('true');
  }, 120_000);
});
