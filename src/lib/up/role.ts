import { ExitCode, type ExitCodeValue, StorctlError } from '../errors.js';
import { RoleLog } from './role-log.js';
import { type Announcement, RoleProcess } from './supervisor.js';

export interface RoleSpec {
  name: string;
  bin: string;
  /** Arguments of each start (an io-engine restarts on the ports it had). */
  args: () => Promise<string[]> | string[];
  env: NodeJS.ProcessEnv;
  logFile: string;
  readyMsg: string;
  /** After the `onReady` listeners of each start (`up` republishes its endpoints). */
  afterReady?: () => Promise<void>;
  /** Aborted: a start still waiting for the ready line gives up (the caller stops the process). */
  abort?: AbortSignal;
  /** Log messages that tell why a start takes long, and what `up` says to the operator for each. */
  announce?: Readonly<Record<string, Announcement>>;
  /**
   * Exit codes that say the role waits for something outside it (the store unreachable, core's
   * lease lost in a store outage): restarted with backoff for as long as it takes, never given up.
   */
  waitingExitCodes?: number[];
  /**
   * Run after the process exited (its PID given), right before it is started again; what it
   * answers is said to the operator.
   */
  beforeRestart?: (exitedPid: number) => Promise<string | null>;
}

/** What a role's exit code says (storctl's exit codes, and core's when its lease is lost). */
const EXIT_REASONS: Record<number, string> = {
  5: 'the store is unreachable or refuses writes; waiting for it',
  6: 'a daemon it needs is unreachable',
  128: 'lost its store lease in a store outage or to another core',
};

/** Restarts in a row that never got ready before `up` gives the role up (and stops the cluster). */
const MAX_FAILED_STARTS = 5;
/** Starts of a role `up` launches before it gives up when each exits waiting for the store. */
const FIRST_START_ATTEMPTS = 3;
/** A run this long resets the backoff: the role was healthy, the next failure is a new one. */
const HEALTHY_RUN_MS = 60_000;

/**
 * One role of `storctl up`, kept running: a role that exits on its own is started again after a
 * backoff (1 s, doubling to 30 s), said on stderr, while the other roles keep serving — a core that
 * exits on a store outage comes back when the store does, and io-engine targets stay up meanwhile.
 * `failed` resolves only when the role cannot be started again: five starts in a row that never got
 * ready, not counting those that exited with one of `waitingExitCodes` (a store outage may last).
 */
export class Role {
  private process: RoleProcess | null = null;
  private stopping = false;
  private readonly listeners: ((ready: Record<string, unknown>) => void | Promise<void>)[] = [];
  private giveUp: (role: Role) => void = () => {};
  readonly failed = new Promise<Role>((resolve) => {
    this.giveUp = resolve;
  });
  restarts = 0;

  /** One log for every start: a failure to write it is said once, not at each restart. */
  private readonly log: RoleLog;

  constructor(
    readonly spec: RoleSpec,
    private readonly say: (line: string) => void,
  ) {
    this.log = new RoleLog(spec.logFile, (line) => say(`${spec.name}: ${line}`));
  }

  get name(): string {
    return this.spec.name;
  }

  /** PID of the running process (the latest one after restarts). */
  get pid(): number | undefined {
    return this.process?.child.pid;
  }

  /** Where the running process serves /metrics, or null. */
  get metricsUrl(): string | null {
    return this.process?.metricsUrl ?? null;
  }

  get running(): boolean {
    return this.process?.running ?? false;
  }

  /** Called with the ready line of the first start and of every restart. */
  onReady(fn: (ready: Record<string, unknown>) => void | Promise<void>): void {
    this.listeners.push(fn);
  }

  /**
   * Start, wait until ready, then keep it running. A first start that exits with one of
   * `waitingExitCodes` (the store not answering yet, or briefly locked while every role opens it at
   * once) is tried again a few times before `up` gives up; any other failure is reported at once.
   */
  async start(): Promise<Record<string, unknown>> {
    for (let attempt = 1; ; attempt++) {
      try {
        const ready = await this.spawn();
        void this.supervise();
        return ready;
      } catch (err) {
        const code = this.process?.child.exitCode ?? null;
        if (code === null || !this.spec.waitingExitCodes?.includes(code)) throw err;
        // Still waiting for the store or a daemon: `up` ends with the role's own exit code.
        if (attempt >= FIRST_START_ATTEMPTS) {
          const exit: ExitCodeValue =
            code === ExitCode.storeUnavailable || code === ExitCode.serviceUnavailable
              ? code
              : ExitCode.failure;
          throw new StorctlError('ROLE_NOT_STARTED', (err as Error).message, exit);
        }
        this.say(`${(err as Error).message}; starting it again in ${attempt} s`);
        await this.pause(attempt * 1000);
      }
    }
  }

  private async spawn(): Promise<Record<string, unknown>> {
    this.process = new RoleProcess(
      this.spec.name,
      this.spec.bin,
      await this.spec.args(),
      this.spec.env,
      this.log,
      this.spec.readyMsg,
      { says: this.spec.announce ?? {}, say: this.say },
    );
    const ready = await untilAborted(
      this.process.ready,
      this.spec.abort,
      `${this.spec.name} was not ready yet`,
    );
    for (const fn of this.listeners) await fn(ready);
    await this.spec.afterReady?.();
    return ready;
  }

  private async supervise(): Promise<void> {
    let delay = 1_000;
    let failedStarts = 0;
    let saidWait: string | undefined;
    for (;;) {
      const started = Date.now();
      const exited = this.process!;
      const code = await exited.wait();
      if (this.stopping) return;
      if (Date.now() - started > HEALTHY_RUN_MS) delay = 1_000;
      const why = code === null ? undefined : EXIT_REASONS[code];
      // While it waits, what it waits for is said once (a full store is not an unreachable one).
      const waiting = code !== null && this.spec.waitingExitCodes?.includes(code);
      const detail = waiting ? exited.reason : undefined;
      const said = detail !== undefined && detail !== saidWait ? `: ${detail}` : '';
      saidWait = waiting ? detail : undefined;
      this.say(
        `${this.name} exited (code ${code}${why ? `: ${why}` : ''}); restarting in ${delay / 1000}s (log: ${this.spec.logFile})${said}`,
      );
      await this.pause(delay);
      if (this.stopping) return;
      const pid = exited.child.pid;
      const before = pid === undefined ? null : await this.spec.beforeRestart?.(pid);
      if (before) this.say(before);
      delay = Math.min(delay * 2, 30_000);
      let afterReady: Error | undefined;
      try {
        await this.spawn();
      } catch (err) {
        if (this.stopping) return; // stopped while it started again
        // Ready and serving: only what follows readiness (republishing the endpoints) failed.
        if (this.process?.running) afterReady = err as Error;
        else {
          const code = this.process?.child.exitCode ?? null;
          // Waiting for the store: not a fault of the role's, tried again until the store is back.
          if (code !== null && this.spec.waitingExitCodes?.includes(code)) continue;
          if (++failedStarts >= MAX_FAILED_STARTS) {
            this.say(`${this.name} did not start ${failedStarts} times in a row: ${(err as Error).message}`);
            this.giveUp(this);
            return;
          }
          continue;
        }
      }
      this.restarts++;
      failedStarts = 0;
      saidWait = undefined;
      this.say(afterReady ? `${this.name} restarted, but ${afterReady.message}` : `${this.name} restarted`);
    }
  }

  /**
   * End the running process so that supervision starts it again (with fresh arguments), saying why
   * first. Nothing happens while the role is stopping or not running.
   */
  restart(why: string): void {
    if (this.stopping || !this.process?.running) return;
    this.say(`${why}: restarting ${this.name}`);
    this.process.child.kill('SIGTERM');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.process?.stop();
    await this.log.end();
  }

  private wake: (() => void) | null = null;

  /**
   * Wait `ms` before a start, or until stop() or the abort signal. The timer holds the event loop:
   * with every role waiting to start again nothing else does, and Node would end `up` at once,
   * silently, with code 13 (an unsettled top-level await).
   */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.spec.abort?.removeEventListener('abort', done);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
      this.spec.abort?.addEventListener('abort', done, { once: true });
    });
  }
}

/** `p`, or a rejection naming `what` as soon as `signal` aborts. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new Error(`stopped while starting: ${what}`));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error(`stopped while starting: ${what}`));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
