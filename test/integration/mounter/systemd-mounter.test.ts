import { spawnSync } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MounterDaemon } from '../../../src/daemons/mounter/index.js';
import { targetId, UNIT_PREFIX } from '../../../src/lib/mount/unit-name.js';
import { SystemdClient, Variant } from '../../../src/lib/systemd/client.js';
import { type CsiClient, publishRequest } from '../../helpers/csi-client.js';
import { SystemdSandbox } from '../../helpers/systemd-sandbox.js';
import { waitFor } from '../../helpers/wait.js';
import { BUCKET, cleanupRoot, type Env, makeEnv, startMounter, targetPath } from './fixture.js';
import { mounterSuite } from './suite.js';

let env: Env;
let sandbox: SystemdSandbox | undefined;
let daemon: MounterDaemon;
let csi: CsiClient;
let systemd: SystemdClient;

const start = () => startMounter(env, { mounter: 'systemd', systemdBus: sandbox!.busAddress });

beforeAll(async () => {
  env = await makeEnv('storctl-sdmnt');
  // Targets live below the sandbox's MOUNT_ROOT, so the units' mounts reach the host.
  sandbox = await SystemdSandbox.start(join(env.root, 'sandbox'), env.targets);
  systemd = new SystemdClient(sandbox.busAddress);
  ({ daemon, csi } = await start());
});

afterAll(async () => {
  csi?.close();
  await daemon?.stop().catch(() => {});
  await systemd?.close();
  // Always, even after a failure: stops the manager, unmounts leftovers, removes its cgroup.
  if (sandbox) await sandbox.stop();
  else if (env) await SystemdSandbox.stopDir(join(env.root, 'sandbox'));
  await env?.s3.stop();
  if (env) await cleanupRoot(env.root);
});

const unitsOf = async (target: string) =>
  (await systemd.listUnitsByPatterns([`${UNIT_PREFIX}*-${targetId(target)}.service`]))
    .filter((u) => u.activeState === 'active')
    .map((u) => u.name);

mounterSuite('S3 mounter, systemd mounter (transient units in a sandboxed systemd)', () => ({
  env,
  daemon,
  csi,
  restart: async () => {
    csi.close();
    await daemon.stop();
    ({ daemon, csi } = await start());
  },
  daemonsFor: unitsOf,
}));

describe('systemd mounter specifics', () => {
  it('uses the systemd mounter and names the unit mount-s3-<version>-<uuidv5(target)>.service', async () => {
    expect(daemon.mounterKind).toBe('systemd');
    const target = targetPath(env, 'pod-u', 'pv-u');
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-u', target, bucket: BUCKET }));
    const [unit] = await unitsOf(target);
    expect(unit).toMatch(new RegExp(`^mount-s3-[0-9.]+-${targetId(target)}\\.service$`));
    const path = (await systemd.getUnit(unit))!;
    expect(await systemd.getProperty(path, 'org.freedesktop.systemd1.Unit', 'CollectMode')).toBe(
      'inactive-or-failed',
    );
    const environment = (await systemd.getProperty(
      path,
      'org.freedesktop.systemd1.Service',
      'Environment',
    )) as string[];
    expect(environment.join(' ')).not.toMatch(/S3RVER|SECRET/i);
    const exec = await systemd.execStart(unit);
    expect(exec[0].argv.slice(1, 4)).toEqual([BUCKET, target, '-f']);
    expect(exec[0].argv.join(' ')).not.toContain('S3RVER:');
    const log = join(env.stateDir, 'logs', `${targetId(target)}.log`);
    // Output goes to the unit's own log file (there is no journald to rely on), appended to the
    // lines s3fs writes there itself; the file is private to root.
    expect(await systemd.getProperty(path, 'org.freedesktop.systemd1.Service', 'StandardOutput')).toBe(
      'append',
    );
    const logStat = await stat(log);
    expect(logStat.isFile()).toBe(true);
    expect(logStat.mode & 0o777).toBe(0o600);
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-u', target_path: target });
    expect(await unitsOf(target)).toEqual([]);
  });

  it('--mounter auto picks systemd when a manager answers on the bus', async () => {
    const other = await startMounter(env, {
      mounter: 'auto',
      systemdBus: sandbox!.busAddress,
      endpoint: `unix://${join(env.root, 'sock2', 'csi.sock')}`,
    });
    expect(other.daemon.mounterKind).toBe('systemd');
    other.csi.close();
    await other.daemon.stop();
  });

  it('a JobRemoved that arrives before anyone waits for the job is kept (reply/signal race)', async () => {
    const client = new SystemdClient(sandbox!.busAddress);
    const unit = 'storctl-race-test.service';
    const job = await client.startTransientUnit(unit, 'fail', [
      ['ExecStart', new Variant('a(sasb)', [['/bin/true', ['/bin/true'], false]])],
      ['Type', new Variant('s', 'oneshot')],
    ]);
    // By the time the unit has run and been collected, the signal has long been handled.
    await waitFor(async () => (await client.unitActiveState(unit)) === undefined, {
      what: 'oneshot unit to finish',
    });
    expect(await client.waitForJob(job, 50)).toBe('done');
    await client.close();
  });

  it('survives a restart of the system bus (dbus-daemon): the next publish reconnects and succeeds', async () => {
    const target = targetPath(env, 'pod-bus', 'pv-bus');
    // Warm the mounter's connection, then restart dbus-daemon under it.
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-bus', target, bucket: BUCKET }));
    const before = await systemd.getProperty(
      (await systemd.getUnit('dbus.service'))!,
      'org.freedesktop.systemd1.Service',
      'MainPID',
    );
    spawnSync(
      'busctl',
      [
        `--address=${sandbox!.busAddress}`,
        'call',
        'org.freedesktop.systemd1',
        '/org/freedesktop/systemd1',
        'org.freedesktop.systemd1.Manager',
        'RestartUnit',
        'ss',
        'dbus.service',
        'replace',
      ],
      { timeout: 10_000 },
    );
    const probe = new SystemdClient(sandbox!.busAddress, 2000);
    await waitFor(
      async () => {
        const pid = await probe
          .getProperty((await probe.getUnit('dbus.service'))!, 'org.freedesktop.systemd1.Service', 'MainPID')
          .catch(() => before);
        return pid !== before && pid !== 0;
      },
      { what: 'dbus-daemon to come back with a new PID' },
    );
    await probe.close();
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-bus', target_path: target });
    await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-bus', target, bucket: BUCKET }));
    expect(await unitsOf(target)).toHaveLength(1);
    await csi.node('NodeUnpublishVolume', { volume_id: 'pv-bus', target_path: target });
  });

  it('reconnects when the D-Bus connection drops and retries the call once', async () => {
    const client = new SystemdClient(sandbox!.busAddress);
    expect(await client.ping()).toMatch(/running|degraded/);
    client.dropConnection();
    expect(await client.ping()).toMatch(/running|degraded/);
    await client.close();
  });
});
