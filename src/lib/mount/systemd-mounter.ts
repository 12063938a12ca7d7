import type { Logger } from '../logger.js';
import { SystemdCallError, type SystemdClient, Variant } from '../systemd/client.js';
import { type DaemonInfo, type DaemonSpec, type Mounter, openDaemonLog } from './mounter.js';
import { sleep, waitUntilGone } from './poll.js';
import type { DaemonRef } from './state.js';
import { parseUnitName, targetId, UNIT_PREFIX, unitNameFor } from './unit-name.js';

const RUNNING = new Set(['active', 'activating', 'reloading']);

/**
 * FUSE daemons as transient systemd services `mount-s3-<version>-<uuidv5(target)>.service`: the
 * name is derived from the target, so after a restart the unit of an existing mount is found
 * again instead of a second one being started. CollectMode=inactive-or-failed lets systemd drop
 * units that ended, failed ones included; output goes to a per-unit log file (no journald needed);
 * the Environment carries no secrets (systemd shows it to anyone over D-Bus).
 */
export class SystemdMounter implements Mounter {
  readonly kind = 'systemd' as const;

  constructor(
    private readonly systemd: SystemdClient,
    private readonly version: string,
    private readonly jobTimeoutMs = 30_000,
    private readonly log?: Logger,
  ) {}

  unitFor(target: string): string {
    return unitNameFor(target, this.version);
  }

  async start(spec: DaemonSpec): Promise<DaemonRef> {
    const unit = this.unitFor(spec.target);
    // A unit of this name still loaded (a daemon left over a corrupted mount, or failed): clear it.
    if (await this.systemd.getUnit(unit)) await this.stopUnit(unit);
    // Emptied (created 0600) here and appended to by the unit: see openDaemonLog.
    await (await openDaemonLog(spec.logFile)).close();
    const props: [string, InstanceType<typeof Variant>][] = [
      ['Description', new Variant('s', spec.description)],
      ['ExecStart', new Variant('a(sasb)', [[spec.argv[0], spec.argv, false]])],
      ['Type', new Variant('s', 'simple')],
      ['CollectMode', new Variant('s', 'inactive-or-failed')],
      ['StandardOutputFileToAppend', new Variant('s', spec.logFile)],
      ['StandardError', new Variant('s', 'inherit')],
      ['KillMode', new Variant('s', 'control-group')],
      ['TimeoutStopUSec', new Variant('t', 10_000_000n)],
    ];
    const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
    if (env.length) props.push(['Environment', new Variant('as', env)]);
    let job: string;
    try {
      job = await this.systemd.startTransientUnit(unit, 'fail', props);
    } catch (err) {
      // The call was retried on a fresh connection after its reply got lost: the first one started it.
      if (err instanceof SystemdCallError && err.type === 'org.freedesktop.systemd1.UnitExists')
        return { kind: 'systemd', unit };
      throw err;
    }
    const result = await this.waitForStart(job, unit);
    if (result !== 'done') throw new Error(`systemd start job of ${unit} finished with result '${result}'`);
    return { kind: 'systemd', unit };
  }

  /**
   * The job's JobRemoved, or, if that signal was lost with a dropped connection, the unit's own
   * state (polled) once it has settled.
   */
  private async waitForStart(job: string, unit: string): Promise<string> {
    let settled = false;
    const poll = async (): Promise<string> => {
      await sleep(250);
      while (!settled) {
        const state = await this.systemd.unitActiveState(unit).catch(() => 'unknown');
        if (state === 'active') return 'done';
        if (state === 'failed') return 'failed';
        await sleep(250);
      }
      return 'canceled';
    };
    try {
      return await Promise.race([this.systemd.waitForJob(job, this.jobTimeoutMs), poll()]);
    } finally {
      settled = true;
    }
  }

  async isRunning(ref: DaemonRef): Promise<boolean> {
    if (!ref.unit) return false;
    const state = await this.systemd.unitActiveState(ref.unit);
    return state !== undefined && RUNNING.has(state);
  }

  async find(target: string): Promise<DaemonRef | undefined> {
    const id = targetId(target);
    const units = await this.systemd.listUnitsByPatterns([`${UNIT_PREFIX}*-${id}.service`]);
    const running = units.find((u) => RUNNING.has(u.activeState));
    return running ? { kind: 'systemd', unit: running.name } : undefined;
  }

  /** Stop a unit whatever its state, and forget a failed one. Missing units are fine. */
  async stopUnit(unit: string): Promise<void> {
    const state = await this.systemd.unitActiveState(unit);
    if (state !== undefined && state !== 'inactive' && state !== 'failed') {
      try {
        const job = await this.systemd.stopUnit(unit, 'replace');
        await this.systemd.waitForJob(job, this.jobTimeoutMs);
      } catch (err) {
        if (!(err instanceof SystemdCallError && err.type === 'org.freedesktop.systemd1.NoSuchUnit'))
          throw err;
      }
    }
    try {
      await this.systemd.resetFailedUnit(unit);
    } catch (err) {
      if (!(err instanceof SystemdCallError)) throw err;
    }
  }

  async stop(ref: DaemonRef, timeoutMs: number): Promise<void> {
    if (!ref.unit) return;
    // After the unmount the daemon exits by itself and the unit goes inactive (then is collected).
    if (!(await waitUntilGone(() => this.isRunning(ref), timeoutMs)))
      this.log?.warn({ unit: ref.unit }, 'unit still running after unmount; stopping it');
    await this.stopUnit(ref.unit);
  }

  async list(): Promise<DaemonInfo[]> {
    const units = await this.systemd.listUnitsByPatterns([`${UNIT_PREFIX}*`]);
    const out: DaemonInfo[] = [];
    for (const u of units) {
      const parsed = parseUnitName(u.name);
      let target: string | undefined;
      try {
        // The unit name proves which argv element is the target: the one whose uuidv5 it carries.
        const exec = await this.systemd.execStart(u.name);
        target = exec
          .flatMap((c) => c.argv)
          .find((a) => a.startsWith('/') && parsed && targetId(a) === parsed.id);
      } catch {}
      out.push({ ref: { kind: 'systemd', unit: u.name }, target, state: u.activeState, name: u.name });
    }
    return out;
  }

  async close(): Promise<void> {
    await this.systemd.close();
  }
}
