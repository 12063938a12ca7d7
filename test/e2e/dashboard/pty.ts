import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { STORCTL_BIN } from '../../helpers/storctl.js';
import { failIfExited, waitFor } from '../../helpers/wait.js';

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * The built `storctl dashboard` in a real pseudo-terminal: util-linux `script` runs it on a pty
 * (sized with stty inside it), keys written to script's stdin, the screen's bytes read from stdout.
 */
export class DashboardPty {
  readonly child: ChildProcess;
  screen = '';

  constructor(args: string[], env: NodeJS.ProcessEnv = {}, size = { cols: 100, rows: 30 }) {
    const cmd = `stty cols ${size.cols} rows ${size.rows}; exec ${shellQuote(process.execPath)} ${shellQuote(STORCTL_BIN)} dashboard ${args.map(shellQuote).join(' ')}`;
    this.child = spawn('script', ['-qefc', cmd, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', TERM: 'xterm-256color', ...env },
    });
    const add = (d: Buffer) => {
      this.screen += d;
    };
    this.child.stdout?.on('data', add);
    this.child.stderr?.on('data', add);
  }

  /** Wait until everything drawn so far contains `text` (fails at once if the dashboard exited). */
  waitForText(text: string, timeoutMs = 20_000): Promise<unknown> {
    return waitFor(
      () => this.screen.includes(text) || failIfExited(this.child, 'storctl dashboard', () => this.screen),
      { what: `'${text}' on the dashboard`, timeoutMs },
    );
  }

  /** Wait until a line drawn so far matches `re`. */
  waitForMatch(re: RegExp, timeoutMs = 20_000): Promise<unknown> {
    return waitFor(
      () => re.test(this.screen) || failIfExited(this.child, 'storctl dashboard', () => this.screen),
      { what: `${re} on the dashboard`, timeoutMs },
    );
  }

  /** Press `q` and resolve with the exit code. */
  async quit(): Promise<number | null> {
    const exited = once(this.child, 'exit');
    this.child.stdin?.write('q');
    const [code] = (await exited) as [number | null];
    return code;
  }

  /** Stop it if a test failed before `q` (this process only, by its pid). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
  }
}
