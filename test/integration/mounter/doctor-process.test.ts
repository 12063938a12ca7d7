import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diagnoseMounts, type Finding, fixMounts } from '../../../src/lib/mount/doctor.js';
import { probePath } from '../../../src/lib/mount/health.js';
import { mountsAt, readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { readMounterRoots, writeMounterRoots } from '../../../src/lib/mount/state-dir.js';
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

  it("scopes itself to its state dir's mounter: another cluster's mounts are left out, and it says so", async () => {
    // This file's mounter recorded its roots at start.
    expect(await readMounterRoots(fx.env.stateDir)).toEqual([fx.env.root]);
    // A second cluster on the machine: its own state dir and kubelet dir, no mounts of its own.
    const other = join(fx.env.root, 'other-cluster');
    await mkdir(join(other, 'mounter'), { recursive: true });
    await writeMounterRoots(join(other, 'mounter'), [join(other, 'kubelet')]);
    const target = targetPath(fx.env, 'pod-s', 'pv-s');
    await fx.csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-s', target, bucket: BUCKET }));
    process.kill((await fuseProcessesBelow(fx.env.root))[0].pid, 'SIGKILL');
    await waitFor(async () => (await probePath(target)).state === 'corrupted', { what: 'ENOTCONN' });

    const theirs = await diagnoseMounts(join(other, 'mounter'), undefined, fx.env.targets);
    expect(theirs.findings).toEqual([]);
    expect(theirs.healthy).toBe(true);
    expect(theirs.scope.outside).toEqual({ mounts: 1, daemons: 0 });
    expect(theirs.scope.summary).toBe(
      `the mounter of state directory ${join(other, 'mounter')}: its recorded targets and targets under ${join(other, 'kubelet')}`,
    );
    expect(theirs.notes.join('\n')).toContain(
      'left out 1 S3 mount(s) and 0 FUSE daemon(s) of another mounter (another cluster on this machine?); --machine-wide checks them too',
    );
    // --fix from the other cluster's state dir leaves this mount alone.
    expect(await fixMounts(join(other, 'mounter'), theirs.findings, undefined, fx.env.targets)).toEqual([]);
    expect((await probePath(target)).state).toBe('corrupted');
    const wide = await diagnoseMounts(join(other, 'mounter'), undefined, {
      under: fx.env.targets,
      machineWide: true,
    });
    expect(kinds(wide.findings)).toEqual([`stale-mount:${target}`]);

    // Its own mounter's doctor finds it and fixes it.
    const ours = await diagnoseMounts(fx.env.stateDir, undefined, fx.env.targets);
    expect(ours.scope.outside).toEqual({ mounts: 0, daemons: 0 });
    expect(kinds(ours.findings)).toEqual([`stale-mount:${target}`]);
    await fixMounts(fx.env.stateDir, ours.findings, undefined, fx.env.targets);
    expect((await diagnoseMounts(fx.env.stateDir, undefined, fx.env.targets)).healthy).toBe(true);
  });
});
