import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import { type RunResult, STORCTL_BIN } from '../../helpers/storctl.js';
import { fixtureDump, ids, space } from './cluster-fixture.js';

const MACHINE_ID = '0123456789abcdef0123456789abcdef';

/**
 * `--cluster-id` defaults to /etc/machine-id, else `dummy-uuid` (the README's global flags). The
 * built CLI runs in a mount namespace of its own (`unshare --mount`, root) where a file of the
 * test's is bind-mounted over /etc/machine-id; the machine's own file is never touched.
 */
describe('storctl --cluster-id default', () => {
  let dir: string;
  let storeUrl: string;
  let n = 0;

  /** Run the CLI with `machineId` as the content of /etc/machine-id and no cluster id given. */
  async function storctlWithMachineId(
    machineId: string,
    args: string[],
    env: NodeJS.ProcessEnv = {},
  ): Promise<RunResult> {
    const file = join(dir, `machine-id-${n++}`);
    writeFileSync(file, machineId);
    const child = spawn(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount --bind "$0" /etc/machine-id && exec "$@"',
        file,
        process.execPath,
        STORCTL_BIN,
        ...args,
        '--store',
        storeUrl,
      ],
      // No STORCTL_CLUSTER_ID from the caller's environment: the default is what is tested.
      { env: { ...process.env, STORCTL_CLUSTER_ID: undefined, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const [code] = (await once(child, 'close')) as [number | null];
    return { code: code ?? -1, stdout, stderr };
  }

  const volumeIds = (r: RunResult) =>
    (JSON.parse(r.stdout) as { spec: { uuid: string } }[]).map((v) => v.spec.uuid).sort();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-cluster-id-'));
    storeUrl = `sqlite:${join(dir, 'store.db')}`;
    // The fixture twice: under the machine id's key space and under dummy-uuid's, one volume each.
    const store = await openStore(storeUrl);
    try {
      for (const [clusterId, only] of [
        [MACHINE_ID, ids.vol1],
        ['dummy-uuid', ids.vol2],
      ]) {
        for (const line of fixtureDump().split('\n')) {
          const { key, value } = JSON.parse(line) as { key: string; value: string };
          if (key.includes('/VolumeSpec/') && !key.endsWith(only)) continue;
          await store.put(key.replace(`/clusters/${space.clusterId}/`, `/clusters/${clusterId}/`), value);
        }
      }
    } finally {
      await store.close();
    }
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reads the key space named by /etc/machine-id', async () => {
    const r = await storctlWithMachineId(`${MACHINE_ID}\n`, ['get', 'volumes', '-o', 'json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(volumeIds(r)).toEqual([ids.vol1]);
  });

  it.each([
    ['empty', ''],
    ['uninitialized', 'uninitialized\n'],
  ])('an %s /etc/machine-id: the key space of dummy-uuid', async (_what, content) => {
    const r = await storctlWithMachineId(content, ['get', 'volumes', '-o', 'json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(volumeIds(r)).toEqual([ids.vol2]);
  });

  it('STORCTL_CLUSTER_ID overrides the machine id, and --cluster-id overrides both', async () => {
    const env = await storctlWithMachineId(MACHINE_ID, ['get', 'volumes', '-o', 'json'], {
      STORCTL_CLUSTER_ID: 'dummy-uuid',
    });
    expect(env.code).toBe(0);
    expect(volumeIds(env)).toEqual([ids.vol2]);
    const flag = await storctlWithMachineId(
      MACHINE_ID,
      ['get', 'volumes', '-o', 'json', '--cluster-id', MACHINE_ID],
      { STORCTL_CLUSTER_ID: 'dummy-uuid' },
    );
    expect(flag.code).toBe(0);
    expect(volumeIds(flag)).toEqual([ids.vol1]);
  });
});
