import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountsAt, readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { CsiClient, publishRequest } from '../../helpers/csi-client.js';
import { runStorctl, type StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import {
  BUCKET,
  cleanupRoot,
  type Env,
  ensureBuilt,
  fuseProcessesBelow,
  makeEnv,
  mounterProcess,
  targetPath,
} from './fixture.js';

let env: Env;
const procs: StorctlProcess[] = [];

beforeAll(async () => {
  ensureBuilt();
  env = await makeEnv('storctl-mntcli');
}, 120_000);

afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL');
  await env?.s3.stop();
  if (env) await cleanupRoot(env.root);
});

function daemon(extra: string[] = []) {
  const p = mounterProcess(env, extra);
  procs.push(p);
  return p;
}

describe('storctl daemon mounter (the built CLI)', () => {
  it('auto falls back to the process mounter, survives a crash of itself, and finds its mounts again', async () => {
    const d1 = daemon(['--mounter', 'auto', '--systemd-bus', `unix:path=${join(env.root, 'no-bus.sock')}`]);
    await waitFor(
      async () => d1.output.includes('mounter listening on ') || (await d1.failIfExited('mounter')),
      {
        what: 'mounter to listen',
      },
    );
    expect(d1.output).toContain('mounter: process');
    let csi = new CsiClient(env.socket);
    const target = targetPath(env, 'pod-1', 'pv-1');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-1', target, bucket: BUCKET }));
    const mountId = mountsAt(await readMountTable(), target)[0].id;
    const [fuse] = await fuseProcessesBelow(env.root);
    csi.close();
    await d1.kill('SIGKILL');
    expect(mountsAt(await readMountTable(), target)[0]?.id).toBe(mountId);

    const d2 = daemon(['--mounter', 'process']);
    await waitFor(
      async () => d2.output.includes('mounter listening on ') || (await d2.failIfExited('mounter')),
      {
        what: 'mounter to listen again',
      },
    );
    csi = new CsiClient(env.socket);
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-1', target, bucket: BUCKET }));
    expect(mountsAt(await readMountTable(), target).map((m) => m.id)).toEqual([mountId]);
    expect((await fuseProcessesBelow(env.root)).map((p) => p.pid)).toEqual([fuse.pid]);
    // No secret reached the log.
    expect(d2.output).not.toContain('S3RVER:');
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-1', target_path: target });
    await waitFor(async () => (await fuseProcessesBelow(env.root)).length === 0, { what: 'daemon to end' });
    csi.close();
    expect(await d2.kill('SIGTERM')).toBe(0);
    expect(existsSync(env.socket)).toBe(false);
  });

  it('a FUSE daemon that dies is a warning naming the way back; one ended by an unpublish is not', async () => {
    const d = daemon(['--mounter', 'process']);
    await waitFor(
      async () => d.output.includes('mounter listening on ') || (await d.failIfExited('mounter')),
      {
        what: 'mounter to listen',
      },
    );
    const csi = new CsiClient(env.socket);
    try {
      const target = targetPath(env, 'pod-2', 'pv-2');
      await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-2', target, bucket: BUCKET }));
      const [fuse] = await fuseProcessesBelow(env.root);
      process.kill(fuse.pid, 'SIGKILL');
      // Before: an info line, 'FUSE daemon exited', below the default log level.
      await waitFor(() => d.output.includes('FUSE daemon died'), { what: 'the warning' });
      const line = JSON.parse(d.output.split('\n').find((l) => l.includes('FUSE daemon died'))!);
      expect(line).toMatchObject({ level: 40, pid: fuse.pid, target, signal: 'SIGKILL' });
      expect(line.msg).toContain('until the volume is published again (NodePublishVolume repairs it)');
      // Published again (repaired), then unpublished: that daemon's end is no death.
      await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-2', target, bucket: BUCKET }));
      await csi.node('NodeUnpublishVolume', { volume_id: 'pv-2', target_path: target });
      await waitFor(async () => (await fuseProcessesBelow(env.root)).length === 0, { what: 'daemon to end' });
    } finally {
      csi.close();
    }
    expect(await d.kill('SIGTERM')).toBe(0);
    expect(d.output.split('FUSE daemon died')).toHaveLength(2);
  });

  it('bad flags exit 2 with a message', async () => {
    let r = await runStorctl(['daemon', 'mounter', '--endpoint', 'tcp://x', '--node-id', 'n']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--endpoint must be unix:\/\/\/absolute\/path.sock/);
    r = await runStorctl([
      'daemon',
      'mounter',
      '--endpoint',
      `unix://${env.socket}`,
      '--node-id',
      'n',
      '--mount-timeout',
      'soon',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--mount-timeout 'soon'/);
  });
});
