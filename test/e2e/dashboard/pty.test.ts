import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl, STORCTL_BIN } from '../../helpers/storctl.js';
import { failIfExited, waitFor } from '../../helpers/wait.js';
import { seed, smallCluster, space, volumeId, volumeRecords } from '../../unit/dashboard/fixture.js';

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * The built `storctl dashboard` in a real pseudo-terminal: util-linux `script` runs it on a pty of
 * 100×30 (set with stty inside it), its keys written to script's stdin, its screen read from stdout.
 */
describe('storctl dashboard in a pseudo-terminal', () => {
  let dir: string;
  let storeUrl: string;
  const args = () => [
    '--store',
    storeUrl,
    '--cluster-id',
    space.clusterId,
    '--state-dir',
    join(dir, 'mounter'),
  ];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-dash-e2e-'));
    storeUrl = `sqlite:${join(dir, 'store.db')}`;
    const store = await openStore(storeUrl);
    try {
      await seed(store, smallCluster());
    } finally {
      await store.close();
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('shows the volumes, follows a write from another process, and exits 0 on q', async () => {
    const cmd = `stty cols 100 rows 30; exec ${shellQuote(process.execPath)} ${shellQuote(STORCTL_BIN)} dashboard ${args().map(shellQuote).join(' ')}`;
    const child: ChildProcess = spawn('script', ['-qefc', cmd, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', TERM: 'xterm-256color' },
    });
    let screen = '';
    child.stdout?.on('data', (d) => {
      screen += d;
    });
    child.stderr?.on('data', (d) => {
      screen += d;
    });
    try {
      await waitFor(
        () => screen.includes(volumeId(3)) || failIfExited(child, 'storctl dashboard', () => screen),
        {
          what: 'the first frame with a volume id',
        },
      );
      expect(screen).toContain('nodes 3/3 online');
      // A write by another process (the embedded store's watch follows other writers too).
      const store = await openStore(storeUrl);
      try {
        await seed(store, volumeRecords(9, { node: 'node-1' }));
      } finally {
        await store.close();
      }
      await waitFor(
        () => screen.includes(volumeId(9)) || failIfExited(child, 'storctl dashboard', () => screen),
        {
          what: 'the volume written while the dashboard ran',
        },
      );
      child.stdin?.write('q');
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    }
  });

  it('refuses without a terminal: exit 2, naming storctl get volumes -o json', async () => {
    const r = await runStorctl(['dashboard', ...args()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('storctl get volumes -o json');
    expect(r.stdout).toBe('');
  });
});
