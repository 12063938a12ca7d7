import { spawn } from 'node:child_process';
import type { Logger } from '../logger.js';
import { type DaemonInfo, type DaemonSpec, type Mounter, openDaemonLog } from './mounter.js';
import { waitUntilGone } from './poll.js';
import { isSameProcessAlive, listFuseProcesses, procStat, terminateProcess } from './processes.js';
import type { DaemonRef } from './state.js';

/**
 * FUSE daemons as detached children (own session, output to their log file). They outlive the
 * mounter on purpose: a restart must not take the volumes down. Found again by PID + start time
 * (from the state file) or by scanning /proc for the daemon serving a target.
 */
export class ProcessMounter implements Mounter {
  readonly kind = 'process' as const;

  /** PIDs of daemons this mounter is stopping (their end is expected). */
  private readonly stopping = new Set<number>();

  constructor(private readonly log?: Logger) {}

  async start(spec: DaemonSpec): Promise<DaemonRef> {
    const out = await openDaemonLog(spec.logFile);
    try {
      const child = spawn(spec.argv[0], spec.argv.slice(1), {
        detached: true,
        stdio: ['ignore', out.fd, out.fd],
        // A clean environment: only what the spec names (no inherited AWS_* keys of the mounter).
        env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', ...spec.env },
        cwd: '/',
      });
      const pid = await new Promise<number>((resolve, reject) => {
        child.once('error', reject);
        child.once('spawn', () => resolve(child.pid!));
      });
      child.once('exit', (code, signal) => {
        const fields = { pid, target: spec.target, code, signal };
        // After an unmount the daemon ends by itself (code 0) or is stopped here; any other end
        // leaves a dead mount behind, which the operator reading this log needs to hear of.
        if (this.stopping.delete(pid) || code === 0) this.log?.info(fields, 'FUSE daemon exited');
        else
          this.log?.warn(
            fields,
            'FUSE daemon died: its mount answers ENOTCONN until the volume is published again (NodePublishVolume repairs it) or `storctl doctor mounts --fix` unmounts it',
          );
      });
      child.unref();
      const stat = await procStat(pid);
      return { kind: 'process', pid, pidStartTime: stat?.startTime };
    } finally {
      await out.close();
    }
  }

  async isRunning(ref: DaemonRef): Promise<boolean> {
    return ref.pid !== undefined && (await isSameProcessAlive(ref.pid, ref.pidStartTime));
  }

  async find(target: string): Promise<DaemonRef | undefined> {
    const p = (await listFuseProcesses()).find((f) => !f.unit && f.argv[2] === target);
    return p ? { kind: 'process', pid: p.pid, pidStartTime: p.startTime } : undefined;
  }

  async stop(ref: DaemonRef, timeoutMs: number): Promise<void> {
    if (ref.pid === undefined) return;
    const pid = ref.pid;
    const gone = (ms: number) => waitUntilGone(() => isSameProcessAlive(pid, ref.pidStartTime), ms);
    // After the unmount a FUSE daemon ends by itself; signals only for one that does not.
    if (await gone(timeoutMs)) return;
    this.log?.warn({ pid }, 'FUSE daemon still running after unmount; sending SIGTERM');
    this.stopping.add(pid);
    await terminateProcess(pid, ref.pidStartTime);
  }

  async list(): Promise<DaemonInfo[]> {
    return (await listFuseProcesses())
      .filter((p) => !p.unit)
      .map((p) => ({
        ref: { kind: 'process' as const, pid: p.pid, pidStartTime: p.startTime },
        target: p.argv[2]?.startsWith('/') ? p.argv[2] : undefined,
        state: 'running',
        name: `${p.binary}[${p.pid}]`,
      }));
  }

  async close(): Promise<void> {}
}
