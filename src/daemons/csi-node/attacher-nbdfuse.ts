import { spawn } from 'node:child_process';
import { mkdir, open, readdir, readFile, rm, rmdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { sleep, waitUntilGone } from '../../lib/mount/poll.js';
import { isSameProcessAlive, procStat } from '../../lib/mount/processes.js';
import { isMountPoint, unmountAll } from '../../lib/mount/unmount.js';
import type { AttachedDevice, Attacher } from './attacher.js';
import { run } from './exec.js';
import type { ProxyRef } from './proxy.js';

/**
 * What nbdfuse is told the export's size is: far more than any volume. The loop device on top is
 * limited (LOOP_SET_STATUS64 lo_sizelimit) to the volume's size, so growing a volume online is one
 * ioctl on the loop device: nbdfuse learns an export's size once, at connect, and never again.
 */
export const NBDFUSE_VIRTUAL_SIZE = 2 ** 44; // 16 TiB

/**
 * LOOP_SET_STATUS64 with a new lo_sizelimit (struct loop_info64: lo_sizelimit is the u64 at byte
 * 32 of 232). util-linux has no command for it and Node no ioctl; perl (perl-base, Essential on
 * Debian) has both.
 */
const SET_SIZELIMIT = `use strict; use Fcntl;
my ($dev, $limit) = @ARGV;
sysopen(my $fh, $dev, O_RDWR) or die "open $dev: $!\\n";
my $buf = "\\0" x 232;
ioctl($fh, 0x4C05, $buf) or die "LOOP_GET_STATUS64 $dev: $!\\n";
substr($buf, 32, 8) = pack('Q<', $limit);
ioctl($fh, 0x4C04, $buf) or die "LOOP_SET_STATUS64 $dev: $!\\n";`;

/** The file a loop device is bound to, from sysfs; undefined when the device is not bound. */
export async function loopBackingFile(device: string): Promise<string | undefined> {
  try {
    return (await readFile(`/sys/block/${basename(device)}/loop/backing_file`, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/**
 * Every loop device bound to `file`, from sysfs (losetup -j would stat the file, which fails once
 * nbdfuse is dead). A FUSE mount detached lazily leaves its file shown as `/<name>`: the file's name
 * is the volume's own uuid, so that still identifies it.
 */
export async function loopsOf(file: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of await readdir('/sys/block').catch(() => [] as string[])) {
    if (!/^loop\d+$/.test(name)) continue;
    const backing = await loopBackingFile(name);
    if (backing === file || backing === `/${basename(file)}`) out.push(`/dev/${name}`);
  }
  return out;
}

/**
 * `losetup -f`: another process can take the free device between losetup's lookup and its bind
 * (EBUSY); a few more tries find the next one.
 */
async function setupLoop(argv: string[]): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await run(argv)).stdout;
    } catch (err) {
      if (attempt >= 5 || !/busy/i.test((err as Error).message)) throw err;
      await sleep(20 * attempt);
    }
  }
}

/** nbdfuse exposes the proxy socket as a file; a loop device makes it a block device. */
export class NbdfuseLoopAttacher implements Attacher {
  readonly kind = 'nbdfuse-loop' as const;

  advertisedSize(): number {
    return NBDFUSE_VIRTUAL_SIZE;
  }

  async attach(o: { dir: string; proxy: ProxyRef; size: number }): Promise<AttachedDevice> {
    const fuseDir = join(o.dir, 'fuse');
    // Named after the volume's directory (a uuid): see loopsOf.
    const file = join(fuseDir, basename(o.dir));
    const pidFile = join(o.dir, 'nbdfuse.pid');
    await mkdir(fuseDir, { recursive: true, mode: 0o700 });
    if (await isMountPoint(fuseDir)) await unmountAll(fuseDir);
    await rm(pidFile, { force: true });
    const out = await open(join(o.dir, 'nbdfuse.log'), 'a', 0o600);
    let pid: number;
    try {
      const child = spawn('nbdfuse', ['-P', pidFile, file, '--unix', o.proxy.socketPath], {
        detached: true,
        stdio: ['ignore', out.fd, out.fd],
        cwd: '/',
      });
      pid = await new Promise<number>((resolve, reject) => {
        child.once('error', (err) =>
          reject(new Error(`cannot run nbdfuse (package libnbd-bin): ${err.message}`)),
        );
        child.once('spawn', () => resolve(child.pid!));
      });
      child.unref();
    } finally {
      await out.close();
    }
    const fusePidStartTime = (await procStat(pid))?.startTime;
    const d: AttachedDevice = { kind: this.kind, device: '', fuseDir, file, fusePid: pid, fusePidStartTime };
    try {
      // nbdfuse writes its pid file once it serves the mount.
      const deadline = Date.now() + 15_000;
      while (!(await readFile(pidFile, 'utf8').catch(() => ''))) {
        if (!(await isSameProcessAlive(pid, fusePidStartTime))) {
          const log = await readFile(join(o.dir, 'nbdfuse.log'), 'utf8').catch(() => '');
          throw new Error(`nbdfuse exited: ${log.trim().split('\n').slice(-3).join(' ') || 'no output'}`);
        }
        if (Date.now() > deadline) throw new Error('nbdfuse did not serve its mount within 15 s');
        await sleep(20);
      }
      await stat(file);
      // Direct I/O: no second page cache of the FUSE file under the loop device's own (about twice
      // the throughput, and a write reaches the proxy when the filesystem issues it).
      const argv = ['losetup', '-f', '--show', '--direct-io=on', '--sizelimit', String(o.size), file];
      d.device = (await setupLoop(argv)).trim();
      if (!/^\/dev\/loop\d+$/.test(d.device))
        throw new Error(`losetup printed '${d.device}', not a loop device`);
      return d;
    } catch (err) {
      await this.detach(d).catch(() => {});
      throw err;
    }
  }

  async detach(d: AttachedDevice): Promise<void> {
    // Only loop devices bound to our file: a recorded device number may have been reused.
    if (d.file) {
      const file = d.file;
      for (const dev of await loopsOf(file)) {
        // A device still open (a filesystem on it not yet released) is cleared when its last user goes.
        await run(['losetup', '-d', dev]).catch(async (err) => {
          if ((await loopBackingFile(dev)) !== undefined) throw err;
        });
      }
      // The FUSE mount must stay until no loop device uses its file: unmounting it first would leave
      // the loop device bound to a file nobody serves.
      if (!(await waitUntilGone(async () => (await loopsOf(file)).length > 0, 15_000, 20)))
        throw new Error(
          `${(await loopsOf(file)).join(', ')} still bound to ${file}: something holds it open`,
        );
    }
    if (d.fuseDir) {
      for (let i = 0; i < 50 && (await isMountPoint(d.fuseDir)); i++) {
        try {
          await run(['umount', '-c', d.fuseDir], { timeoutMs: 10_000 });
        } catch {
          await sleep(50);
        }
      }
      if (await isMountPoint(d.fuseDir)) await unmountAll(d.fuseDir);
    }
    if (d.fusePid) {
      const alive = () => isSameProcessAlive(d.fusePid!, d.fusePidStartTime);
      if (!(await waitUntilGone(alive, 5000))) {
        try {
          process.kill(d.fusePid, 'SIGTERM');
        } catch {}
        if (!(await waitUntilGone(alive, 5000))) {
          try {
            process.kill(d.fusePid, 'SIGKILL');
          } catch {}
        }
      }
    }
    if (d.fuseDir) await rmdir(d.fuseDir).catch(() => {});
  }

  async problem(d: AttachedDevice): Promise<string | undefined> {
    if (d.fusePid && !(await isSameProcessAlive(d.fusePid, d.fusePidStartTime)))
      return `nbdfuse (pid ${d.fusePid}) is gone`;
    if ((await loopBackingFile(d.device)) !== d.file) return `${d.device} is no longer bound to ${d.file}`;
    return undefined;
  }

  async grow(d: AttachedDevice, size: number): Promise<void> {
    if ((await loopBackingFile(d.device)) !== d.file)
      throw new Error(`${d.device} is not bound to ${d.file}`);
    await run(['perl', '-e', SET_SIZELIMIT, d.device, String(size)]);
  }
}
