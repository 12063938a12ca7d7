import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Network partitions for tests, without touching the host's network: a test file (a scenario) runs
 * in a network namespace of its own (`unshare -n`, root), with loopback up and the rule that routes
 * local addresses moved behind preference 100, so that a blackhole rule ahead of it cuts one
 * loopback address (127.0.0.2, say) as a dropped link would: connections to it stall, new ones fail.
 */
const SETUP = 'ip link set lo up && ip rule add pref 100 lookup local && ip rule del pref 0 lookup local';

/** Run the TypeScript file `scenario` in a namespace of its own; resolves with what it printed and its exit code. */
function runInNetns(
  scenario: URL,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const node = `exec ${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(fileURLToPath(scenario))}`;
  // Not under vitest's runner: helpers that hook into it when VITEST is set would throw there.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST')));
  return new Promise((resolve) => {
    execFile(
      'unshare',
      ['-n', 'sh', '-c', `${SETUP} && ${node}`],
      { env, timeout: timeoutMs, killSignal: 'SIGTERM', maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * Run `scenario` in a namespace of its own and return what it reported with reportResult(); throws
 * with all it printed when it failed or reported nothing.
 */
export async function scenarioResult<T>(scenario: URL, timeoutMs: number): Promise<T> {
  const run = await runInNetns(scenario, timeoutMs);
  const line = run.stdout.split('\n').find((l) => l.startsWith(RESULT));
  if (run.code !== 0 || !line)
    throw new Error(`scenario failed (${run.code}):\n${run.stdout}\n${run.stderr}`);
  return JSON.parse(line.slice(RESULT.length)) as T;
}

/** In a scenario: report its result to scenarioResult (last). */
export function reportResult(result: unknown): void {
  console.log(`${RESULT}${JSON.stringify(result)}`);
}

const RESULT = 'RESULT ';

/** In a scenario: cut (or, with `on` false, restore) every path to `address`. */
export function cutAddress(address: string, on = true): void {
  execFileSync('ip', ['rule', on ? 'add' : 'del', 'to', address, 'blackhole', 'pref', '10']);
}
