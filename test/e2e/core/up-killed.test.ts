import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isSameProcessAlive } from '../../../src/lib/mount/processes.js';
import { runStorctl, StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { UpHome } from './up-fixture.js';

/**
 * `storctl up` killed with SIGKILL (the OOM killer, an impatient `kill -9`) cannot stop its roles
 * in order; they stop by themselves when it is gone, instead of running on unsupervised with the
 * pools, the store lease and the sockets the next `up` needs.
 */
describe('storctl up killed with SIGKILL (built CLI)', () => {
  const homes: UpHome[] = [];
  let up: StorctlProcess | undefined;
  let fakeRole: ChildProcess | undefined;
  /** Roles of a killed up: if they failed to stop, the test stops them (it started them). */
  let orphaned: number[] = [];
  afterEach(async () => {
    for (const pid of orphaned.splice(0)) if (await isSameProcessAlive(pid)) process.kill(pid, 'SIGKILL');
    await up?.kill('SIGINT');
    up = undefined;
    if (fakeRole && fakeRole.exitCode === null && fakeRole.signalCode === null) {
      fakeRole.kill('SIGKILL');
      await once(fakeRole, 'exit');
    }
    fakeRole = undefined;
    for (const h of homes.splice(0)) rmSync(h.home, { recursive: true, force: true });
  });

  it('its roles stop by themselves, and the next up on the data dir starts with the volumes', async () => {
    const home = new UpHome();
    homes.push(home);
    const args = ['--roles', 'core,io-engine', '--nodes', '1'];
    const first = await home.start(args);
    up = first;
    const created = await runStorctl(['volume', 'create', '--size', '16Mi', '-o', 'jsonpath={.spec.uuid}'], {
      env: home.env,
    });
    expect(created.code).toBe(0);
    const roles = Object.values(home.endpoints().roles as Record<string, number>);
    expect(roles).toHaveLength(2);

    orphaned = roles;
    expect(await first.kill('SIGKILL')).toBeNull();
    up = undefined;
    await waitFor(
      async () => {
        for (const pid of roles) if (await isSameProcessAlive(pid)) return false;
        return true;
      },
      { what: `the roles of the killed up (pids ${roles.join(', ')}) stopped`, timeoutMs: 30_000 },
    );

    // Nothing of the first one is in the way: the store lease and the pool are free at once.
    up = await home.start(args);
    expect(up.output).not.toContain('waiting for the store lease');
    const listed = await runStorctl(['get', 'volumes', '-o', 'jsonpath={.items[*].spec.uuid}'], {
      env: home.env,
    });
    expect(listed.stdout.trim()).toBe(created.stdout.trim());
  }, 120_000);

  it('a new up waits for roles a killed one left running, naming them, then starts', async () => {
    const home = new UpHome();
    homes.push(home);
    // The endpoints file of an `up` that is gone, naming a role process that still runs.
    fakeRole = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'daemon', 'io-engine'], {
      stdio: 'ignore',
    });
    const dataDir = join(home.home, 'storctl');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const gone = spawn('true');
    await once(gone, 'exit');
    writeFileSync(
      join(dataDir, 'endpoints.json'),
      JSON.stringify({
        store: `sqlite:${join(dataDir, 'store.db')}`,
        pid: gone.pid,
        roles: { 'io-engine node-1': fakeRole.pid },
      }),
    );
    const waiting = new StorctlProcess(
      ['up', '--rest', '127.0.0.1:0', '--pool-capacity', '1GiB', '--roles', 'core,io-engine', '--nodes', '1'],
      home.env,
    );
    up = waiting;
    await waitFor(
      async () =>
        waiting.output.includes('waiting for them to stop') || (await waiting.failIfExited('storctl up')),
      { what: 'up waiting for the role left running' },
    );
    expect(waiting.output).toContain(
      `the roles of the previous \`storctl up\` here (pid ${gone.pid}, gone) still run: io-engine node-1 (pid ${fakeRole.pid}); waiting for them to stop`,
    );
    expect(waiting.output).not.toContain('ready:');
    fakeRole.kill('SIGKILL');
    await waitFor(
      async () => /^ready: /m.test(waiting.output) || (await waiting.failIfExited('storctl up')),
      {
        what: 'up ready once the left role is gone',
        timeoutMs: 60_000,
      },
    );
  }, 120_000);
});
