export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Poll `running` every `intervalMs` until it reports false or `timeoutMs` has passed; true when the
 * thing is gone (checked once more at the deadline, so a slow last poll still counts).
 */
export async function waitUntilGone(
  running: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 10,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await running())) return true;
    await sleep(intervalMs);
  }
  return !(await running());
}
