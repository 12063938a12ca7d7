import { spawn } from 'node:child_process';
import { mkdir, open, readFile, rm, rmdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { sleep, waitUntilGone } from '../../lib/mount/poll.js';
import { isSameProcessAlive, procStat, terminateProcess } from '../../lib/mount/processes.js';
import { isMountPoint, unmountAll } from '../../lib/mount/unmount.js';
import { exemptFromOomKiller } from '../../lib/oom-guard.js';
import type { AttachedDevice, Attacher } from './attacher.js';
import { LoopOnFuseAttacher, unbindLoops, unmountFuse } from './loop-on-fuse.js';
import type { ProxyRef } from './proxy.js';

/**
 * nbdfuse exposes the proxy socket as a file; a loop device makes it a block device. The attacher
 * before fuse-loop (attacher-fuse.ts), which serves the file from the proxy itself: one process
 * and one socket hop fewer. Kept for volumes staged with it and as `--attacher nbdfuse-loop`.
 */
export class NbdfuseLoopAttacher extends LoopOnFuseAttacher implements Attacher {
  readonly kind = 'nbdfuse-loop' as const;

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
    await exemptFromOomKiller(pid); // csi-node runs as root: this holds
    const fusePidStartTime = (await procStat(pid))?.startTime;
    const d: AttachedDevice = { kind: this.kind, device: '', fuseDir, file, fusePid: pid, fusePidStartTime };
    return this.bindOrUndo(d, o.size, async () => {
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
    });
  }

  async detach(d: AttachedDevice): Promise<void> {
    // The FUSE mount must stay until no loop device uses its file: unmounting it first would leave
    // the loop device bound to a file nobody serves.
    if (d.file) await unbindLoops(d.file);
    if (d.fuseDir) await unmountFuse(d.fuseDir);
    if (d.fusePid) {
      // Unmounted, nbdfuse ends by itself; signals only for one that does not.
      const alive = () => isSameProcessAlive(d.fusePid!, d.fusePidStartTime);
      if (!(await waitUntilGone(alive, 5000))) await terminateProcess(d.fusePid, d.fusePidStartTime);
    }
    if (d.fuseDir) await rmdir(d.fuseDir).catch(() => {});
  }

  async problem(d: AttachedDevice): Promise<string | undefined> {
    if (d.fusePid && !(await isSameProcessAlive(d.fusePid, d.fusePidStartTime)))
      return `nbdfuse (pid ${d.fusePid}) is gone`;
    return this.loopProblem(d);
  }
}
