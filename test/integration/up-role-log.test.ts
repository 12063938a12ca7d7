import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RoleLog } from '../../src/lib/up/role-log.js';
import { RoleProcess } from '../../src/lib/up/supervisor.js';
import { waitFor } from '../helpers/wait.js';

/** Fill a filesystem to the last byte with one file (it stops at ENOSPC). */
function fill(file: string): void {
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeFileSync(file, chunk, { flag: 'a' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  }
}

describe("up's role logs on a full disk", () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-role-log-'));
  const disk = join(dir, 'disk');
  mkdirSync(disk);
  // A small filesystem of our own to fill: a full disk under the data dir's logs.
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'storctl-role-log-test', disk]);
  afterAll(() => {
    execFileSync('umount', [disk]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('a role whose log cannot be written runs on, and up (this process) with it', async () => {
    const said: string[] = [];
    const bin = join(dir, 'chatty.js');
    writeFileSync(
      bin,
      `console.log(JSON.stringify({ msg: 'ready' }));
       let n = 0;
       const t = setInterval(() => {
         console.log('x'.repeat(200));
         if (++n === 100) require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'printed'))}, '');
       }, 2);`,
    );
    // /dev/full refuses every write with ENOSPC.
    const r = new RoleProcess(
      'chatty',
      bin,
      [],
      process.env,
      new RoleLog('/dev/full', (l) => said.push(`chatty: ${l}`)),
      'ready',
    );
    try {
      await r.ready;
      await waitFor(() => said.length > 0, { what: 'the log failure said' });
      expect(said[0]).toMatch(
        /^chatty: cannot write the log \/dev\/full \(ENOSPC: no space left on device\): its output is dropped until the file takes writes again .*; the role runs on$/,
      );
      await waitFor(() => existsSync(join(dir, 'printed')), { what: 'the role printing on' });
      expect(r.running).toBe(true);
      expect(said).toHaveLength(1); // said once, not per line
    } finally {
      await r.stop();
    }
  });

  it('once the disk has room again, the log takes writes again and says how much was lost', async () => {
    const filler = join(disk, 'filler');
    const file = join(disk, 'role.log');
    writeFileSync(file, '');
    fill(filler);
    const said: string[] = [];
    const log = new RoleLog(file, (l) => said.push(l), 100);
    log.write(`${'a'.repeat(8192)}\n`);
    await waitFor(() => said.length === 1, { what: 'the log failure said' });
    expect(said[0]).toContain(`cannot write the log ${file} (ENOSPC: no space left on device)`);
    log.write('dropped while full\n');
    rmSync(filler);
    // Written lines after the retry interval reopen the file.
    await waitFor(
      () => {
        log.write('after\n');
        return said.length === 2;
      },
      { what: 'the log back' },
    );
    expect(said[1]).toMatch(
      new RegExp(`^the log ${file} takes writes again \\(\\d+ bytes of output were lost\\)$`),
    );
    await log.end();
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('dropped while full');
    const lost = JSON.parse(text.split('\n').find((l) => l.includes('output lost'))!);
    expect(lost).toMatchObject({ component: 'up', err: 'ENOSPC: no space left on device' });
    expect(lost.lost_bytes).toBeGreaterThanOrEqual(8193 + 'dropped while full\n'.length);
    expect(text.trimEnd().split('\n').at(-1)).toBe('after');
  });
});
