import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { StorctlProcess } from '../../helpers/storctl.js';
import { FatalWaitError, failIfExited, fatal, waitFor } from '../../helpers/wait.js';

describe('waitFor', () => {
  it('retries ordinary errors until the check passes', async () => {
    let calls = 0;
    const v = await waitFor(
      () => {
        if (++calls < 3) throw new Error('not yet');
        return calls;
      },
      { intervalMs: 1 },
    );
    expect(v).toBe(3);
  });

  it('rethrows a fatal error at once, long before its deadline', async () => {
    let calls = 0;
    const started = Date.now();
    const err = await waitFor(
      () => {
        calls++;
        fatal('the child died');
      },
      { timeoutMs: 30_000, intervalMs: 1 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FatalWaitError);
    expect((err as Error).message).toBe('the child died');
    expect(calls).toBe(1);
    // Far below the 30 s deadline, with room for a slow machine.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('ends the wait on a child that exited, with its exit status and the tail of its log', async () => {
    const child = spawn(process.execPath, ['-e', 'console.error("boom at start"); process.exit(3)'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.on('data', (d) => {
      log += d;
    });
    const err = await waitFor(
      async () => {
        await failIfExited(child, 'the tool', () => log);
        return false;
      },
      { timeoutMs: 30_000 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FatalWaitError);
    expect((err as Error).message).toMatch(/the tool exited \(code 3\); last output:\nboom at start/);
  });

  it('ends the wait on a storctl daemon that died at start (the built CLI)', async () => {
    const started = Date.now();
    const proc = new StorctlProcess(['daemon', 'core', '--rest', 'not-an-address']);
    const err = await waitFor(
      async () => {
        if (proc.output.includes('"core ready"')) return true;
        await proc.failIfExited('core');
        return false;
      },
      { timeoutMs: 45_000 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FatalWaitError);
    expect((err as Error).message).toMatch(/core exited \(code 2\); last output:\n[\s\S]*--rest/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
