import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Role, type RoleSpec } from '../../../src/lib/up/role.js';
import { RoleLog } from '../../../src/lib/up/role-log.js';
import { RoleProcess } from '../../../src/lib/up/supervisor.js';
import { waitFor } from '../../helpers/wait.js';

describe("up's role supervisor", () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-supervisor-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const role = (name: string, script: string) => {
    const bin = join(dir, `${name}.js`);
    writeFileSync(bin, script);
    return new RoleProcess(
      name,
      bin,
      [],
      process.env,
      new RoleLog(join(dir, `${name}.log`), () => {}),
      'ready',
    );
  };

  it('a role that exits before ready is reported with its exit code and the reason it gave last', async () => {
    const r = role(
      'engine',
      `console.log(JSON.stringify({ msg: 'starting' }));
       console.log(JSON.stringify({ msg: 'fatal', err: 'the database stayed locked by another process for 5000 ms' }));
       process.exit(5);`,
    );
    await expect(r.ready).rejects.toThrow(
      /^engine exited \(code 5\) before it was ready \(the database stayed locked by another process for 5000 ms\); see .*engine\.log$/,
    );
    expect(readFileSync(join(dir, 'engine.log'), 'utf8')).toContain('"msg":"starting"');
  });

  it('a plain stderr line is the reason when nothing else was said', async () => {
    const r = role('plain', `process.stderr.write('cannot bind 127.0.0.1:1\\n'); process.exit(3);`);
    await expect(r.ready).rejects.toThrow(
      /code 3\) before it was ready \(cannot bind 127\.0\.0\.1:1\); see /,
    );
  });

  it("storctl's Error: line and its Try: hints are the reason, not the trailer after them", async () => {
    const r = role(
      'cli',
      `process.stderr.write('Error: cannot serve the REST API on 127.0.0.1:1: address already in use\\nTry: pass another --rest HOST:PORT\\nRe-run with --log-level debug for details.\\n'); process.exit(4);`,
    );
    await expect(r.ready).rejects.toThrow(
      /code 4\) before it was ready \(cannot serve the REST API on 127\.0\.0\.1:1: address already in use; try: pass another --rest HOST:PORT\); see /,
    );
  });

  it("a Node.js crash's reason is its error line, not the stack trace or the Node.js version trailer", async () => {
    const thrown = role(
      'thrown',
      `function deep(n) { if (n === 0) throw new TypeError('pool metadata is not an object'); deep(n - 1); } deep(20);`,
    );
    await expect(thrown.ready).rejects.toThrow(
      /code 1\) before it was ready \(TypeError: pool metadata is not an object\); see /,
    );
    // A module that does not load (a half-installed upgrade): node prints the error's properties too.
    const missing = role('missing', `require('./no-such-module.js');`);
    await expect(missing.ready).rejects.toThrow(
      /code 1\) before it was ready \(Error: Cannot find module '\.\/no-such-module\.js'\); see /,
    );
  });

  it('the ready line resolves with its fields', async () => {
    const r = role(
      'ok',
      `console.log(JSON.stringify({ msg: 'ready', port: 7 })); setTimeout(() => {}, 200);`,
    );
    await expect(r.ready).resolves.toMatchObject({ port: 7 });
    await r.stop();
  });

  /** A Role whose script counts its starts (`n`, from 1) and then runs `body`. */
  const countingRole = (name: string, body: string, spec: Partial<RoleSpec> = {}) => {
    const bin = join(dir, `${name}.js`);
    const count = join(dir, `${name}.count`);
    writeFileSync(count, '0');
    writeFileSync(
      bin,
      `const fs = require('node:fs');
       const n = Number(fs.readFileSync(${JSON.stringify(count)}, 'utf8')) + 1;
       fs.writeFileSync(${JSON.stringify(count)}, String(n));
       ${body}`,
    );
    const said: string[] = [];
    const r = new Role(
      {
        name,
        bin,
        args: () => [],
        env: process.env,
        logFile: join(dir, `${name}.log`),
        readyMsg: 'ready',
        ...spec,
      },
      (l) => said.push(l),
    );
    return { r, said };
  };

  const flaky = (name: string, failures: number, code: number) =>
    countingRole(
      name,
      `if (n <= ${failures}) { console.error('store sqlite:x is unreachable: locked'); process.exit(${code}); }
       console.log(JSON.stringify({ msg: 'ready', start: n }));
       setInterval(() => {}, 1000);`,
      { waitingExitCodes: [5] },
    );

  it('a first start that exits waiting for the store is tried again, and says so', async () => {
    const { r, said } = flaky('waits', 1, 5);
    try {
      await expect(r.start()).resolves.toMatchObject({ start: 2 });
      expect(said).toEqual([
        expect.stringMatching(
          /^waits exited \(code 5\) before it was ready \(store sqlite:x is unreachable: locked\); see .*; starting it again in 1 s$/,
        ),
      ]);
    } finally {
      await r.stop();
    }
  });

  it('a restart that is ready but whose endpoints cannot be written is said, and the role is watched on', async () => {
    // Started: ready, then exits as core does on a lost lease. Restarted: ready, and stays.
    let published = 0;
    const { r, said } = countingRole(
      'relapse',
      `console.log(JSON.stringify({ msg: 'ready', start: n }));
       if (n === 1) setTimeout(() => process.exit(128), 50);
       else setInterval(() => {}, 1000);`,
      {
        afterReady: async () => {
          if (++published === 2) throw new Error('cannot write endpoints.json: ENOENT');
        },
      },
    );
    try {
      await r.start();
      await waitFor(() => r.restarts === 1, { what: 'the restart counted', timeoutMs: 10_000 });
      expect(said).toEqual([
        expect.stringMatching(/^relapse exited \(code 128: lost its store lease.*\); restarting in 1s/),
        'relapse restarted, but cannot write endpoints.json: ENOENT',
      ]);
      expect(r.running).toBe(true);
    } finally {
      await r.stop();
    }
  }, 20_000);

  it('while a role waits, why is said once per reason, and beforeRestart runs before each start', async () => {
    // Ready, then exits as core does when the store refuses writes; twice more waiting; then stays.
    const before: number[] = [];
    const { r, said } = countingRole(
      'waiter',
      `const full = () => { console.error('Error: store x is full: quota exhausted; nothing was written'); process.exit(5); };
       if (n === 1) { console.log(JSON.stringify({ msg: 'ready', start: n })); setTimeout(full, 50); }
       else if (n === 2) full();
       else if (n === 3) { console.error('Error: store x is unreachable: connect ECONNREFUSED'); process.exit(5); }
       else { console.log(JSON.stringify({ msg: 'ready', start: n })); setInterval(() => {}, 1000); }`,
      {
        waitingExitCodes: [5],
        beforeRestart: async (pid) => {
          before.push(pid);
          return before.length === 3 ? 'released what it held' : null;
        },
      },
    );
    try {
      await r.start();
      await waitFor(() => r.restarts === 1, { what: 'the role back', timeoutMs: 20_000 });
      const exited = (delay: number) =>
        `waiter exited (code 5: the store is unreachable or refuses writes; waiting for it); restarting in ${delay}s (log: ${join(dir, 'waiter.log')})`;
      expect(said).toEqual([
        `${exited(1)}: store x is full: quota exhausted; nothing was written`,
        exited(2),
        `${exited(4)}: store x is unreachable: connect ECONNREFUSED`,
        'released what it held',
        'waiter restarted',
      ]);
      expect(before).toHaveLength(3);
      expect(new Set(before).size).toBe(3);
    } finally {
      await r.stop();
    }
  }, 30_000);

  it('a first start that fails otherwise, or keeps waiting, is reported without more tries', async () => {
    const other = flaky('broken', 1, 3);
    await expect(other.r.start()).rejects.toThrow(/code 3\)/);
    expect(other.said).toEqual([]);
    const waiting = flaky('forever', 9, 5);
    await expect(waiting.r.start()).rejects.toThrow(/code 5\)/);
    expect(readFileSync(join(dir, 'forever.count'), 'utf8')).toBe('3');
  }, 20_000);
});
