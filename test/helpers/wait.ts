import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/**
 * An error no retry can cure (a child process the test waits on has exited): `waitFor` rethrows it
 * at once instead of polling on until its deadline.
 */
export class FatalWaitError extends Error {
  override name = 'FatalWaitError';
}

/** Throw from a `waitFor` check to end the wait now with `message`. */
export function fatal(message: string): never {
  throw new FatalWaitError(message);
}

/** The last `lines` lines of a log, for failure messages. */
export function tail(log: string, lines = 40): string {
  return log.trimEnd().split('\n').slice(-lines).join('\n');
}

/**
 * In a `waitFor` check: once `child` has exited, wait for its output streams to close (so the log
 * is complete) and fail the wait at once with the exit status and the tail of `log()`. While the
 * child runs it resolves null ("not yet"), so it composes: `found ?? (await failIfExited(…))`.
 */
export async function failIfExited(child: ChildProcess, what: string, log: () => string): Promise<null> {
  if (child.exitCode === null && child.signalCode === null) return null;
  await outputClosed(child, 1000);
  const status = child.signalCode ? `signal ${child.signalCode}` : `code ${child.exitCode}`;
  fatal(`${what} exited (${status}); last output:\n${tail(log())}`);
}

/**
 * After `child` has exited: wait until its stdout/stderr have ended ('exit' can come before the last
 * data), at most `boundMs`: a grandchild still holding the pipes must not hold the wait.
 */
export async function outputClosed(child: ChildProcess, boundMs: number): Promise<void> {
  // 'close' follows 'exit' once stdout/stderr have ended; it may already have been emitted.
  if (![child.stdout, child.stderr].some((s) => s && !s.closed)) return;
  await Promise.race([
    once(child, 'close').catch(() => undefined),
    new Promise((r) => setTimeout(r, boundMs).unref()),
  ]);
}

/**
 * Poll `check` until it returns a truthy value; the condition, never a fixed sleep, is what tests wait
 * on. Errors the check throws are retried until the deadline, except a `FatalWaitError`, which ends
 * the wait at once.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  {
    timeoutMs = 20_000,
    intervalMs = 25,
    what = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (err) {
      if (err instanceof FatalWaitError) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
