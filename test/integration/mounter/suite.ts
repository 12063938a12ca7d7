import { existsSync } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import type { MounterDaemon } from '../../../src/daemons/mounter/index.js';
import { probePath } from '../../../src/lib/mount/health.js';
import { mountsAt, readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { targetId } from '../../../src/lib/mount/unit-name.js';
import type { CsiClient } from '../../helpers/csi-client.js';
import { publishRequest } from '../../helpers/csi-client.js';
import { S3RVER_KEYS } from '../../helpers/s3.js';
import { waitFor } from '../../helpers/wait.js';
import { BUCKET, type Env, fuseMountsBelow, fuseProcessesBelow, targetPath } from './fixture.js';

/** What a suite needs from its file: the running pieces, and a restart of the mounter. */
export interface SuiteContext {
  env: Env;
  daemon: MounterDaemon;
  csi: CsiClient;
  restart(): Promise<void>;
  /** Extra checks after a publish (e.g. the unit of the target). */
  daemonsFor(target: string): Promise<string[]>;
}

/** The publish/unpublish behaviour every mounter must show (run for ProcessMounter and SystemdMounter). */
const mountAt = async (t: string) =>
  mountsAt(await readMountTable(), t).find((m) => m.fsType === 'fuse.s3fs');

export function mounterSuite(title: string, ctx: () => SuiteContext) {
  describe(title, () => {
    const c = () => ctx();
    it('answers Identity and NodeGetInfo / NodeGetCapabilities; socket dir is 0700', async () => {
      const info = await c().csi.identity<{ name: string; vendor_version: string }>('GetPluginInfo');
      expect(info.name).toBe('s3.csi.storctl.io');
      expect(await c().csi.identity('Probe')).toMatchObject({ ready: { value: true } });
      expect(await c().csi.node('NodeGetInfo')).toMatchObject({ node_id: 'node-1' });
      expect(await c().csi.node('NodeGetCapabilities')).toEqual({ capabilities: [] });
      expect((await stat(join(c().env.root, 'sock'))).mode & 0o777).toBe(0o700);
      await expect(c().csi.node('NodeStageVolume', {})).rejects.toMatchObject({ code: status.UNIMPLEMENTED });
    });

    it('publishes, writes land in the bucket, republish is idempotent, unpublish cleans everything', async () => {
      const target = targetPath(c().env, 'pod-a', 'pv-a');
      await c().csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-a', target, bucket: BUCKET }));
      const m = await mountAt(target);
      expect(m).toBeDefined();
      await writeFile(join(target, 'hello.txt'), 'hello from storctl');
      await waitFor(async () => (await c().env.s3.readObject(BUCKET, 'hello.txt')) === 'hello from storctl', {
        what: 'object in bucket',
      });

      // Republish: same mount (same mount id), credentials rewritten in place, no second c().daemon.
      const credFile = join(c().env.stateDir, 'credentials', `${targetId(target)}.passwd-s3fs`);
      const before = await stat(credFile);
      expect(before.mode & 0o777).toBe(0o600);
      expect((await stat(join(c().env.stateDir, 'credentials'))).mode & 0o777).toBe(0o700);
      await c().csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-a', target, bucket: BUCKET }));
      expect((await mountAt(target))?.id).toBe(m!.id);
      expect((await stat(credFile)).ino).not.toBe(before.ino);
      expect((await fuseProcessesBelow(c().env.root)).filter((p) => p.argv[2] === target)).toHaveLength(1);
      expect(await c().daemonsFor(target)).toHaveLength(1);

      await c().csi.node('NodeUnpublishVolume', { volume_id: 'pv-a', target_path: target });
      expect(await mountAt(target)).toBeUndefined();
      expect(existsSync(target)).toBe(false);
      expect(existsSync(credFile)).toBe(false);
      expect((await fuseProcessesBelow(c().env.root)).filter((p) => p.argv[2] === target)).toHaveLength(0);
      // Unpublish of something not mounted is success.
      await c().csi.node('NodeUnpublishVolume', { volume_id: 'pv-a', target_path: target });
    });

    // What this test does NOT show: that S3 accepted the rotated secret. s3rver 3.7.1 verifies V2
    // signatures only; for V4, which s3fs signs with, its authentication middleware checks that the
    // access key id exists and skips the signature ("Signature version 4 calculation is
    // unimplemented") — which is why 'first-secret', not s3rver's secret, mounts at all. And s3fs
    // reads its passwd file only when it starts, so the running mount keeps the first secret either
    // way. Shown here: the secret file is rewritten in place for the next start, and no secret
    // reaches the daemon's argv or environment.
    it('per-volume secrets: refreshed in place on republish, never in argv or env', async () => {
      const target = targetPath(c().env, 'pod-s', 'pv-s');
      const secrets = { access_key_id: S3RVER_KEYS.accessKeyId, secret_access_key: 'first-secret' };
      await c().csi.node(
        'NodePublishVolume',
        publishRequest({
          volumeId: 'pv-s',
          target,
          bucket: BUCKET,
          context: { authenticationSource: 'secret' },
          secrets,
        }),
      );
      const credFile = join(c().env.stateDir, 'credentials', `${targetId(target)}.passwd-s3fs`);
      expect(await readFile(credFile, 'utf8')).toBe('S3RVER:first-secret\n');
      const mountId = (await mountAt(target))!.id;
      await c().csi.node(
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
      const proc = (await fuseProcessesBelow(c().env.root)).find((p) => p.argv[2] === target)!;
      expect(proc.argv.join(' ')).not.toContain('rotated-secret');
      expect(await readFile(`/proc/${proc.pid}/environ`, 'utf8')).not.toContain('secret');
      await c().csi.node('NodeUnpublishVolume', { volume_id: 'pv-s', target_path: target });
      expect(existsSync(credFile)).toBe(false);
    });

    it('readonly publish refuses writes', async () => {
      const target = targetPath(c().env, 'pod-ro', 'pv-ro');
      await c().csi.node(
        'NodePublishVolume',
        publishRequest({ volumeId: 'pv-ro', target, bucket: BUCKET, mode: 'MULTI_NODE_READER_ONLY' }),
      );
      await expect(writeFile(join(target, 'nope.txt'), 'x')).rejects.toMatchObject({ code: 'EROFS' });
      await c().csi.node('NodeUnpublishVolume', { volume_id: 'pv-ro', target_path: target });
    });

    it('kill -9 of s3fs: republish finds the corrupted mount (ENOTCONN), unmounts it and mounts fresh', async () => {
      const target = targetPath(c().env, 'pod-k', 'pv-k');
      await c().csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-k', target, bucket: BUCKET }));
      const proc = (await fuseProcessesBelow(c().env.root)).find((p) => p.argv[2] === target)!;
      process.kill(proc.pid, 'SIGKILL');
      await waitFor(async () => (await probePath(target)).state === 'corrupted', {
        what: 'ENOTCONN at target',
      });
      await c().csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-k', target, bucket: BUCKET }));
      expect((await probePath(target)).state).toBe('ok');
      expect(mountsAt(await readMountTable(), target)).toHaveLength(1);
      await c().csi.node('NodeUnpublishVolume', { volume_id: 'pv-k', target_path: target });
      expect(existsSync(target)).toBe(false);
    });

    it('a restart of the mounter leaves mounts untouched; republish reuses them', async () => {
      const target = targetPath(c().env, 'pod-r', 'pv-r');
      await c().csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-r', target, bucket: BUCKET }));
      const mountId = (await mountAt(target))!.id;
      const pid = (await fuseProcessesBelow(c().env.root)).find((p) => p.argv[2] === target)!.pid;
      const daemonsBefore = await c().daemonsFor(target);
      await c().restart();
      expect((await mountAt(target))?.id).toBe(mountId);
      await c().csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-r', target, bucket: BUCKET }));
      expect((await mountAt(target))?.id).toBe(mountId);
      expect(
        (await fuseProcessesBelow(c().env.root)).filter((p) => p.argv[2] === target).map((p) => p.pid),
      ).toEqual([pid]);
      expect(await c().daemonsFor(target)).toEqual(daemonsBefore);
      await c().csi.node('NodeUnpublishVolume', { volume_id: 'pv-r', target_path: target });
      expect(existsSync(target)).toBe(false);
    });

    // Repeated: s3fs mounts before its bucket check and may answer a probe between the failed check
    // and its exit; CI saw that window taken for a successful mount twice, the second time because
    // s3fs's stdout, flushed at exit, overwrote the [CRT] line at the start of the log.
    it('a mount of a bucket that does not exist returns NOT_FOUND with the FUSE daemon output, and leaves nothing behind', async () => {
      for (let i = 0; i < 10; i++) {
        const target = targetPath(c().env, `pod-f${i}`, `pv-f${i}`);
        const err = await c()
          .csi.node(
            'NodePublishVolume',
            publishRequest({ volumeId: `pv-f${i}`, target, bucket: 'no-such-bucket' }),
          )
          .catch((e) => e);
        expect(err.code).toBe(status.NOT_FOUND);
        expect(err.details).toMatch(/FUSE daemon output: .*(bucket|not found|CRT)/i);
        expect(existsSync(target)).toBe(false);
        expect(await readdir(join(c().env.stateDir, 'credentials'))).toEqual([]);
        expect(await fuseMountsBelow(c().env.root)).toEqual([]);
        // The daemon's log file and its stdout append to one file: every line whole, none lost.
        const log = await readFile(join(c().env.stateDir, 'logs', `${targetId(target)}.log`), 'utf8');
        expect(log).toContain('[CRT]');
        for (const line of log.split('\n').filter(Boolean))
          expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+ \[[A-Z]{3}\] /);
      }
    });

    it('50 volumes published concurrently and unpublished: no leftovers', async () => {
      const targets = Array.from({ length: 50 }, (_, i) => targetPath(c().env, `pod-c${i}`, `pv-c${i}`));
      await Promise.all(
        targets.map((t, i) =>
          c().csi.node(
            'NodePublishVolume',
            publishRequest({ volumeId: `pv-c${i}`, target: t, bucket: BUCKET }),
          ),
        ),
      );
      expect(await fuseMountsBelow(c().env.root)).toHaveLength(50);
      await Promise.all(
        targets.map((t, i) => c().csi.node('NodeUnpublishVolume', { volume_id: `pv-c${i}`, target_path: t })),
      );
      expect(await fuseMountsBelow(c().env.root)).toEqual([]);
      await waitFor(async () => (await fuseProcessesBelow(c().env.root)).length === 0, {
        what: 'daemons to end',
      });
      expect(await readdir(join(c().env.stateDir, 'credentials'))).toEqual([]);
      expect(JSON.parse(await readFile(join(c().env.stateDir, 'mounts.json'), 'utf8')).mounts).toEqual({});
      for (const t of targets) expect(existsSync(t)).toBe(false);
    }, 120_000);
  });
}
