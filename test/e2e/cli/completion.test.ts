import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { runStorctl } from '../../helpers/storctl.js';

const execFileP = promisify(execFile);

/**
 * Shell completion through oclif's autocomplete plugin, as a user sets it up: the script
 * `storctl autocomplete script bash` prints is sourced into a real bash, and its completion
 * function answers for partial command lines.
 */
describe('shell completion (built CLI, bash)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-completion-'));
  const env = { XDG_CACHE_HOME: join(dir, 'cache'), HOME: dir };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The words bash would offer after `line` (the last word is the one being completed). */
  async function complete(setup: string, line: string[]): Promise<string[]> {
    const script = join(dir, 'complete.sh');
    writeFileSync(
      script,
      `${setup}
COMP_WORDS=(${line.map((w) => `'${w}'`).join(' ')})
COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 ))
COMP_LINE='${line.join(' ')}'
COMP_POINT=\${#COMP_LINE}
fn=$(complete -p storctl | sed -E 's/.*-F ([^ ]+).*/\\1/')
$fn
printf '%s\\n' "\${COMPREPLY[@]}"
`,
    );
    const { stdout } = await execFileP('bash', ['--norc', script], { env: { ...process.env, ...env } });
    return [...new Set(stdout.split('\n').filter(Boolean))];
  }

  it('completes topics, commands and flags once set up', async () => {
    const refresh = await runStorctl(['autocomplete', '--refresh-cache'], { env });
    expect(refresh.code, refresh.stderr).toBe(0);
    const setup = await runStorctl(['autocomplete', 'script', 'bash'], { env });
    expect(setup.code, setup.stderr).toBe(0);
    expect(setup.stdout).toContain('STORCTL_AC_BASH_SETUP_PATH=');
    expect(await complete(setup.stdout, ['storctl', 'ge'])).toEqual(['get']);
    expect(await complete(setup.stdout, ['storctl', 'get', 'vol'])).toEqual(
      expect.arrayContaining(['volume', 'volumes']),
    );
    expect(await complete(setup.stdout, ['storctl', 'switchover', '--vo'])).toEqual(['--volume']);
    expect(await complete(setup.stdout, ['storctl', 'get', 'volumes', '--no-h'])).toEqual(['--no-headers']);
  });

  it('names the shells it supports and refuses another with a usage error', async () => {
    const help = await runStorctl(['autocomplete', '--help'], { env });
    expect(help.stdout).toMatch(/bash/);
    expect(help.stdout).toMatch(/zsh/);
    const bad = await runStorctl(['autocomplete', 'fish'], { env });
    expect(bad.code).toBe(2);
  });
});
