import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { exitReason } from '../exit-reason.js';
import type { RoleLog } from './role-log.js';

/** Lines of a role's output kept for its failure message: a Node.js crash's stack trace fits. */
const TAIL_LINES = 40;

/** What `up` says when a role logs a message: fixed words, or words made from the log record. */
export type Announcement = string | ((record: Record<string, unknown>) => string);

/** A JSON log line's fields, or none when the line is not JSON. */
function logRecord(line: string): Record<string, unknown> {
  try {
    const v = JSON.parse(line);
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}

/**
 * One `storctl daemon <role>` child of `storctl up`: its output goes to the role's log (one per
 * role, kept across its restarts), the first JSON line whose `msg` matches `readyMsg` is its ready
 * report, and it is stopped by PID only.
 */
export class RoleProcess {
  readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  readonly ready: Promise<Record<string, unknown>>;
  /** Where the role serves /metrics, from its "metrics listening" line (null: not said, or off). */
  metricsUrl: string | null = null;

  constructor(
    readonly name: string,
    bin: string,
    args: string[],
    env: NodeJS.ProcessEnv,
    private readonly log: RoleLog,
    readyMsg: string,
    /** Log messages that tell why a start takes long, and what to say to the operator for each. */
    announce: { says: Readonly<Record<string, Announcement>>; say: (line: string) => void } = {
      says: {},
      say: () => {},
    },
  ) {
    this.child = spawn(process.execPath, [bin, ...args], {
      env,
      // The IPC channel tells the role when `up` is gone, even by SIGKILL: it then stops (lib/command.ts).
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      // A process group of its own: a terminal's Ctrl-C reaches `up` alone, which stops the roles
      // in order (all at once, a nexus would see its remote children die first).
      detached: true,
    });
    let buffer = '';
    this.ready = new Promise((resolve, reject) => {
      this.child.stdout!.on('data', (d: Buffer) => {
        this.log.write(d);
        this.keepTail(d);
        buffer += d.toString();
        let nl = buffer.indexOf('\n');
        while (nl >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          for (const [msg, words] of Object.entries(announce.says))
            if (line.includes(msg))
              announce.say(`${name}: ${typeof words === 'string' ? words : words(logRecord(line))}`);
          if (line.includes('"metrics listening"')) {
            const { url } = logRecord(line);
            if (url !== undefined) this.metricsUrl = String(url);
          }
          if (line.includes(readyMsg)) {
            const v = logRecord(line);
            if (v.msg === readyMsg) resolve(v);
          }
          nl = buffer.indexOf('\n');
        }
      });
      this.child.once('exit', (code, signal) => {
        // The output is read to its end first (within a second: a grandchild may hold the pipe),
        // so the reason the role gave is in the message, not only in its log file.
        const drained = once(this.child, 'close');
        const wait = new Promise((r) => setTimeout(r, 1000).unref());
        void Promise.race([drained, wait])
          // ...and written to the log file the message names.
          .then(() => this.log.flushed())
          .then(() => {
            const why = this.reason;
            reject(
              new Error(
                `${name} exited (${signal ?? `code ${code}`}) before it was ready${why ? ` (${why})` : ''}; see ${log.file}`,
              ),
            );
          });
      });
    });
    this.ready.catch(() => {});
    this.child.stderr!.on('data', (d: Buffer) => {
      this.log.write(d);
      this.keepTail(d);
    });
    this.exited = once(this.child, 'exit').then(([code]) => code as number | null);
  }

  /** The last lines the role printed (stdout and stderr), for a failure before ready. */
  private tail: string[] = [];

  private keepTail(d: Buffer): void {
    this.tail.push(
      ...d
        .toString()
        .split('\n')
        .filter((l) => l.trim()),
    );
    if (this.tail.length > TAIL_LINES) this.tail.splice(0, this.tail.length - TAIL_LINES);
  }

  /** Why it ended, from what it printed last (exitReason), once it has exited. */
  get reason(): string | undefined {
    return exitReason(this.tail);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  wait(): Promise<number | null> {
    return this.exited;
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.running && this.child.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
  }
}
