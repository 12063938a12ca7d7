import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { waitUntilGone } from './poll.js';

/** Start time (clock ticks since boot) and state of a live PID; undefined when gone or a zombie. */
export async function procStat(pid: number): Promise<{ startTime: string; state: string } | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state); field 22 (starttime) is rest[19].
    if (rest[0] === 'Z' || rest[0] === 'X') return undefined;
    return { state: rest[0], startTime: rest[19] };
  } catch {
    return undefined;
  }
}

export async function isSameProcessAlive(pid: number, startTime?: string): Promise<boolean> {
  const s = await procStat(pid);
  return !!s && (startTime === undefined || s.startTime === startTime);
}

/** How `terminateProcess` left a process. */
export type Termination = 'gone' | 'terminated' | 'killed' | 'alive';

/**
 * End a process known by PID (and start time, so a PID the kernel gave to another process is never
 * signalled): SIGTERM, then SIGKILL if it is still there after `graceMs`. 'gone' when it was not
 * running, 'alive' when even SIGKILL did not end it within `graceMs` (stuck in the kernel).
 */
export async function terminateProcess(
  pid: number,
  startTime: string | undefined,
  graceMs = 5000,
): Promise<Termination> {
  const alive = () => isSameProcessAlive(pid, startTime);
  for (const [sig, ended] of [
    ['SIGTERM', 'terminated'],
    ['SIGKILL', 'killed'],
  ] as const) {
    if (!(await alive())) return sig === 'SIGTERM' ? 'gone' : 'terminated';
    try {
      process.kill(pid, sig);
    } catch (err) {
      // It ended since it was last seen alive; any other refusal (EPERM) is the caller's to see.
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      return sig === 'SIGTERM' ? 'gone' : 'terminated';
    }
    if (await waitUntilGone(alive, graceMs)) return ended;
  }
  return 'alive';
}

export interface FuseProcess {
  pid: number;
  startTime: string;
  binary: string;
  argv: string[];
  /** A process of a mount-s3-* systemd unit (seen through its cgroup). */
  unit?: string;
}

/** Every s3fs / mount-s3 process visible in /proc. */
export async function listFuseProcesses(binaries = ['s3fs', 'mount-s3']): Promise<FuseProcess[]> {
  const out: FuseProcess[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    try {
      const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8'))
        .split('\0')
        .filter((a, i, all) => a !== '' || i < all.length - 1);
      if (!argv.length || !binaries.includes(basename(argv[0]))) continue;
      const stat = await procStat(pid);
      if (!stat) continue;
      const cgroup = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
      const unit = /\/(mount-s3-[^/\s]+\.service)/.exec(cgroup)?.[1];
      out.push({ pid, startTime: stat.startTime, binary: basename(argv[0]), argv, unit });
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}
