import { execFile, spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const exitHooks = new Map<string, () => void>();
const SCRIPT = fileURLToPath(new URL('./systemd-sandbox.sh', import.meta.url));

/**
 * A real systemd manager (PID 1 of private namespaces, own system bus) for tests, on a machine whose
 * PID 1 is not systemd. Mounts its units make at or below `mountRoot` appear on the host. Always
 * stop() it (afterAll), also after a failure: stop is idempotent and restores the host.
 */
export class SystemdSandbox {
  private constructor(
    readonly scratch: string,
    readonly mountRoot: string,
    readonly busAddress: string,
  ) {}

  static async start(scratch: string, mountRoot: string): Promise<SystemdSandbox> {
    // Safety net: a worker that exits without reaching afterAll still stops the sandbox.
    const onExit = () => spawnSync(SCRIPT, ['stop', scratch], { stdio: 'ignore', timeout: 30_000 });
    process.once('exit', onExit);
    exitHooks.set(scratch, onExit);
    try {
      const { stdout } = await run(SCRIPT, ['start', scratch, mountRoot], { timeout: 60_000 });
      return new SystemdSandbox(scratch, mountRoot, stdout.trim());
    } catch (err) {
      await SystemdSandbox.stopDir(scratch);
      const e = err as { stderr?: string; message: string };
      throw new Error(`systemd sandbox did not start: ${e.stderr || e.message}`);
    }
  }

  static async stopDir(scratch: string): Promise<void> {
    await run(SCRIPT, ['stop', scratch], { timeout: 60_000 });
    const hook = exitHooks.get(scratch);
    if (hook) process.removeListener('exit', hook);
    exitHooks.delete(scratch);
  }

  /** Host PID of the sandbox's PID 1. */
  async pid1(): Promise<number> {
    return Number((await readFile(join(this.scratch, 'state', 'pid1.pid'), 'utf8')).trim());
  }

  async stop(): Promise<void> {
    await SystemdSandbox.stopDir(this.scratch);
  }
}
