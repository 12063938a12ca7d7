import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diagnoseMounts, type Finding, fixMounts } from '../../../src/lib/mount/doctor.js';
import { probePath } from '../../../src/lib/mount/health.js';
import { mountsAt, readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { publishRequest } from '../../helpers/csi-client.js';
import { waitFor } from '../../helpers/wait.js';
import { BUCKET, fuseProcessesBelow, processMounterFixture, targetPath } from './fixture.js';

const fx = processMounterFixture('storctl-docproc');

const kinds = (fs: Finding[]) => fs.map((f) => `${f.kind}:${f.target ?? f.subject}`).sort();

describe('doctor with the process mounter (no systemd)', () => {
  it('finds and fixes a stale mount of a killed FUSE process', async () => {
    const target = targetPath(fx.env, 'pod-k', 'pv-k');
    await fx.csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-k', target, bucket: BUCKET }));
    process.kill((await fuseProcessesBelow(fx.env.root))[0].pid, 'SIGKILL');
    await waitFor(async () => (await probePath(target)).state === 'corrupted', { what: 'ENOTCONN' });
    const report = await diagnoseMounts(fx.env.stateDir, undefined, fx.env.targets);
    expect(report.notes.join()).toMatch(/no systemd manager reachable/);
    expect(kinds(report.findings)).toEqual([`stale-mount:${target}`]);
    const done = await fixMounts(fx.env.stateDir, report.findings, undefined, fx.env.targets);
    expect(done.join()).toMatch(/dead mount/);
    expect(mountsAt(await readMountTable(), target)).toEqual([]);
    expect((await diagnoseMounts(fx.env.stateDir, undefined, fx.env.targets)).healthy).toBe(true);
  });

  it('finds and terminates an orphaned FUSE process (running, nothing mounted at its target)', async () => {
    const target = targetPath(fx.env, 'pod-o', 'pv-o');
    // Looks like `s3fs BUCKET TARGET ...` in /proc, mounts nothing.
    const idle = join(fx.env.root, 'idle.cjs');
    await writeFile(idle, 'setTimeout(() => {}, 600000);\n');
    const child = spawn('/bin/bash', ['-c', 'exec -a s3fs "$0" "$1" "$2"', process.execPath, idle, target], {
      stdio: 'ignore',
    });
    await waitFor(async () => (await fuseProcessesBelow(fx.env.root)).some((p) => p.pid === child.pid), {
      what: 'fixture process',
    });
    const report = await diagnoseMounts(fx.env.stateDir, undefined, fx.env.targets);
    expect(kinds(report.findings)).toEqual([`orphaned-process:${target}`]);
    await fixMounts(fx.env.stateDir, report.findings, undefined, fx.env.targets);
    await waitFor(() => child.exitCode !== null || child.signalCode !== null, { what: 'orphan to end' });
    expect((await diagnoseMounts(fx.env.stateDir, undefined, fx.env.targets)).healthy).toBe(true);
  });
});
