import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { failIfExited, waitFor } from './wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKER = fileURLToPath(new URL('./store-worker.ts', import.meta.url));

/** A store-worker.ts child process; its stdout lines are collected for the test to wait on. */
export class StoreWorker {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  stderr = '';
  private readonly exited: Promise<number | null>;

  constructor(storeUrl: string, args: string[]) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER, storeUrl, ...args], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let partial = '';
    this.child.stdout?.on('data', (d) => {
      const parts = (partial + d).split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts);
    });
    this.child.stderr?.on('data', (d) => {
      this.stderr += d;
    });
    this.exited = once(this.child, 'exit').then(([code]) => code as number | null);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Wait for a stdout line matching `pattern`; fails early when the worker dies. */
  async waitForLine(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    return waitFor(
      async () => {
        for (const line of this.lines) {
          const m = line.match(pattern);
          if (m) return m;
        }
        await failIfExited(this.child, `worker ${this.pid}`, () => this.stderr);
        return null;
      },
      { timeoutMs, intervalMs: 10, what: `worker line ${pattern}` },
    );
  }

  /** Write one last line to the worker's stdin and close it. */
  send(line: string): void {
    this.child.stdin?.end(`${line}\n`);
  }

  wait(): Promise<number | null> {
    return this.exited;
  }

  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.running) process.kill(this.pid, signal);
    await this.exited;
  }
}
