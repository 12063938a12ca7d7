import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MounterDaemon, STORCTL_VERSION } from '../../../src/daemons/mounter/index.js';
import type { Finding } from '../../../src/lib/mount/doctor.js';
import { probePath } from '../../../src/lib/mount/health.js';
import { mountsAt, readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { targetId, UNIT_PREFIX, unitNameFor } from '../../../src/lib/mount/unit-name.js';
import { SystemdClient, Variant } from '../../../src/lib/systemd/client.js';
import { type CsiClient, publishRequest } from '../../helpers/csi-client.js';
import { runStorctl } from '../../helpers/storctl.js';
import { SystemdSandbox } from '../../helpers/systemd-sandbox.js';
import { waitFor } from '../../helpers/wait.js';
import {
  BUCKET,
  cleanupRoot,
  type Env,
  ensureBuilt,
  fuseProcessesBelow,
  makeEnv,
  startMounter,
  targetPath,
} from './fixture.js';

let env: Env;
let sandbox: SystemdSandbox | undefined;
let daemon: MounterDaemon;
let csi: CsiClient;
let systemd: SystemdClient;

beforeAll(async () => {
  // The doctor runs as the built CLI, exactly as an operator runs it.
  ensureBuilt();
  env = await makeEnv('storctl-doctor');
  sandbox = await SystemdSandbox.start(join(env.root, 'sandbox'), env.targets);
  systemd = new SystemdClient(sandbox.busAddress);
  ({ daemon, csi } = await startMounter(env, { mounter: 'systemd', systemdBus: sandbox.busAddress }));
}, 120_000);

afterAll(async () => {
  csi?.close();
  await daemon?.stop().catch(() => {});
  await systemd?.close();
  if (sandbox) await sandbox.stop();
  else if (env) await SystemdSandbox.stopDir(join(env.root, 'sandbox'));
  await env?.s3.stop();
  if (env) await cleanupRoot(env.root);
});

async function doctor(...extra: string[]) {
  const r = await runStorctl([
    'doctor',
    'mounts',
    '--systemd-bus',
    sandbox!.busAddress,
    '--state-dir',
    env.stateDir,
    '-o',
    'json',
    // Only this file's targets: other test files mount (and kill daemons) at the same time.
    '--under',
    env.targets,
    ...extra,
  ]);
  let report:
    | {
        healthy: boolean;
        findings: Finding[];
        fixed?: string[];
        after?: { healthy: boolean; findings: Finding[] };
      }
    | undefined;
  try {
    report = JSON.parse(r.stdout);
  } catch {}
  return { ...r, report: report! };
}

const kinds = (fs: Finding[]) => fs.map((f) => `${f.kind}:${f.target ?? f.subject}`).sort();

async function killDaemonOf(target: string) {
  const p = (await fuseProcessesBelow(env.root)).find((x) => x.argv[2] === target)!;
  process.kill(p.pid, 'SIGKILL');
  await waitFor(async () => (await probePath(target)).state === 'corrupted', {
    what: `ENOTCONN at ${target}`,
  });
}

describe('storctl doctor mounts', () => {
  it('healthy node: exit 0; a table by default', async () => {
    const target = targetPath(env, 'pod-h', 'pv-h');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-h', target, bucket: BUCKET }));
    const r = await doctor();
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.report.healthy).toBe(true);
    const table = await runStorctl([
      'doctor',
      'mounts',
      '--systemd-bus',
      sandbox!.busAddress,
      '--state-dir',
      env.stateDir,
      '--under',
      env.targets,
    ]);
    expect(table.stdout).toMatch(/Scanned 1 S3 mount\(s\), 1 unit\(s\).*\nScope: .*\n.*Healthy/);
    // It says what it checked: this mounter's state dir and the roots that mounter recorded.
    expect(table.stdout).toContain(
      `Scope: the mounter of state directory ${env.stateDir}: its recorded targets and targets under ${env.root}.`,
    );
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-h', target_path: target });
  });

  it('kill -9 of a FUSE daemon: reported as a stale mount; republish recovers; --fix clears it', async () => {
    const target = targetPath(env, 'pod-k', 'pv-k');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-k', target, bucket: BUCKET }));
    await killDaemonOf(target);
    let r = await doctor();
    expect(r.code).toBe(1);
    expect(kinds(r.report.findings)).toContain(`stale-mount:${target}`);
    expect(r.report.findings.find((f) => f.kind === 'stale-mount')!.meaning).toMatch(/ENOTCONN/);

    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-k', target, bucket: BUCKET }));
    expect((await doctor()).code).toBe(0);

    await killDaemonOf(target);
    r = await doctor('--fix', '-y');
    expect(r.code).toBe(0);
    expect(r.report.fixed!.join('\n')).toMatch(/unmounted .*dead mount at/);
    expect(r.report.after!.healthy).toBe(true);
    expect(mountsAt(await readMountTable(), target)).toEqual([]);
    expect(existsSync(join(env.stateDir, 'credentials', `${targetId(target)}.passwd-s3fs`))).toBe(false);
  });

  it('--fix without -y and no answer changes nothing', async () => {
    const stray = join(env.stateDir, 'credentials', '00000000-0000-5000-8000-000000000000.passwd-s3fs');
    await writeFile(stray, 'K:S\n', { mode: 0o600 });
    const r = await doctor('--fix');
    expect(r.code).toBe(1);
    expect(existsSync(stray)).toBe(true);
    const fixed = await doctor('--fix', '-y');
    expect(fixed.code).toBe(0);
    expect(kinds(fixed.report.findings)).toEqual([`leftover-credentials:${stray}`]);
    expect(existsSync(stray)).toBe(false);
  });

  it('an orphaned unit (running, nothing mounted at its target) is found and stopped', async () => {
    const target = targetPath(env, 'pod-o', 'pv-o');
    const unit = unitNameFor(target, STORCTL_VERSION);
    const job = await systemd.startTransientUnit(unit, 'fail', [
      ['Description', new Variant('s', 'orphan fixture')],
      [
        'ExecStart',
        new Variant('a(sasb)', [
          ['/bin/sh', ['/bin/sh', '-c', 'exec sleep 600', 'sh', BUCKET, target], false],
        ]),
      ],
      ['CollectMode', new Variant('s', 'inactive-or-failed')],
    ]);
    await systemd.waitForJob(job, 10_000);
    const r = await doctor();
    expect(r.code).toBe(1);
    expect(kinds(r.report.findings)).toEqual([`orphaned-unit:${target}`]);
    const fixed = await doctor('--fix', '-y');
    expect(fixed.code).toBe(0);
    expect(await systemd.unitActiveState(unit)).toBeUndefined();
  });

  it('a collision (two units serving one target) is found; --fix keeps the recorded one', async () => {
    const target = targetPath(env, 'pod-c', 'pv-c');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-c', target, bucket: BUCKET }));
    const recorded = unitNameFor(target, STORCTL_VERSION);
    const [exec] = await systemd.execStart(recorded);
    // A second daemon for the same target, as a leaked unit of an older mounter version would be.
    const second = `${UNIT_PREFIX}0.0.1-${targetId(target)}.service`;
    const argv = exec.argv.map((a) =>
      a.startsWith('logfile=') ? `logfile=${join(env.root, 'second.log')}` : a,
    );
    const job = await systemd.startTransientUnit(second, 'fail', [
      ['ExecStart', new Variant('a(sasb)', [[exec.path, argv, false]])],
      ['CollectMode', new Variant('s', 'inactive-or-failed')],
    ]);
    await systemd.waitForJob(job, 10_000);
    await waitFor(
      async () =>
        mountsAt(await readMountTable(), target).length === 2 && (await probePath(target)).state === 'ok',
      { what: 'stacked mount' },
    );
    const r = await doctor();
    expect(r.code).toBe(1);
    expect(kinds(r.report.findings)).toEqual([`collision:${target}`]);
    const fixed = await doctor('--fix', '-y');
    expect(fixed.code, fixed.stdout).toBe(0);
    expect(await systemd.unitActiveState(second)).toBeUndefined();
    expect(await systemd.unitActiveState(recorded)).toBe('active');
    expect((await probePath(target)).state).toBe('ok');
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-c', target_path: target });
    expect(mountsAt(await readMountTable(), target)).toEqual([]);
    expect((await doctor()).code).toBe(0);
  });

  it('a failed unit is reported and reset', async () => {
    const target = targetPath(env, 'pod-f', 'pv-f');
    const unit = `${UNIT_PREFIX}0.0.1-${targetId(target)}.service`;
    // Default CollectMode: a failed unit stays loaded until reset-failed.
    const job = await systemd.startTransientUnit(unit, 'fail', [
      ['ExecStart', new Variant('a(sasb)', [['/bin/false', ['/bin/false', BUCKET, target], false]])],
    ]);
    await systemd.waitForJob(job, 10_000);
    await waitFor(async () => (await systemd.unitActiveState(unit)) === 'failed', { what: 'unit to fail' });
    const r = await doctor();
    expect(r.code).toBe(1);
    expect(kinds(r.report.findings)).toEqual([`failed-unit:${target}`]);
    const fixed = await doctor('--fix', '-y');
    expect(fixed.code, fixed.stdout).toBe(0);
    expect(await systemd.unitActiveState(unit)).toBeUndefined();
  });

  it('an unreachable --systemd-bus is an error (exit 2)', async () => {
    const r = await runStorctl([
      'doctor',
      'mounts',
      '--systemd-bus',
      `unix:path=${join(env.root, 'nope.sock')}`,
      '--state-dir',
      env.stateDir,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/systemd manager at unix:path=.*nope\.sock is unreachable/);
  });
});
