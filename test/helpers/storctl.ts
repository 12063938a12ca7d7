import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { failIfExited, outputClosed } from './wait.js';

/** The built CLI (`npm run build` first); tests run it exactly as a user does. */
export const STORCTL_BIN = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run one storctl command to completion. */
export async function runStorctl(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string } = {},
): Promise<RunResult> {
  const child = spawn(process.execPath, [STORCTL_BIN, ...args], {
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  child.stdin.end(options.input ?? '');
  const [code] = (await once(child, 'close')) as [number | null];
  return { code: code ?? -1, stdout, stderr };
}

/** A long-running storctl process (a daemon); stopped by PID only. */
export class StorctlProcess {
  readonly child: ChildProcess;
  output = '';
  private exited: Promise<number | null>;

  constructor(args: string[], env: NodeJS.ProcessEnv = {}) {
    // STORCTL_NODE_ARGS: node flags for the daemon (a benchmark's --cpu-prof).
    const nodeArgs = (env.STORCTL_NODE_ARGS ?? process.env.STORCTL_NODE_ARGS)?.split(' ') ?? [];
    this.child = spawn(process.execPath, [...nodeArgs, STORCTL_BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (d) => {
      this.output += d;
    });
    this.child.stderr?.on('data', (d) => {
      this.output += d;
    });
    // Resolve once the output is complete too: tests read `output` right after `wait()`.
    this.exited = once(this.child, 'exit').then(async ([code]) => {
      await outputClosed(this.child, 5000);
      return code as number | null;
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * In a `waitFor` check: fails the wait at once (a FatalWaitError with the tail of the output) when
   * the process has exited, e.g. a daemon that died at start.
   */
  failIfExited(what = `storctl ${this.child.spawnargs.slice(2, 4).join(' ')}`): Promise<null> {
    return failIfExited(this.child, what, () => this.output);
  }

  /** Resolves with the exit code (null when killed by a signal). */
  wait(): Promise<number | null> {
    return this.exited;
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.running) this.child.kill(signal);
    return this.exited;
  }
}
