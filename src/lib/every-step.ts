/**
 * Run teardown steps in order, each even when an earlier one failed; then throw the first failure.
 * A stop that gave up at its first failing step (a pool claim on a disk gone read-only) left the
 * rest running: an io-engine asked to stop kept its NBD server and its liveness lease, so it never
 * exited and its node read online.
 */
export async function everyStep(steps: (() => unknown)[]): Promise<void> {
  let failure: { err: unknown } | null = null;
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failure ??= { err };
    }
  }
  if (failure) throw failure.err;
}
