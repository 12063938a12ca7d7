import { rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { AttachedDevice, Attacher } from './attacher.js';
import { LoopOnFuseAttacher, unbindLoops, unmountFuse } from './loop-on-fuse.js';
import { type ProxyRef, serveFileFromProxy } from './proxy.js';
import type { ProxyStatus } from './proxy-server.js';

/** The file a volume's proxy serves, in the volume's directory and named after it (a uuid: see loopsOf). */
export const fuseFileOf = (dir: string) => join(dir, basename(dir));

/**
 * The path proxy serves the volume as a FUSE file of its own (src/lib/fuse/file-server.ts); a loop
 * device makes it a block device. Where the nbd module is missing, this is the shortest path a
 * filesystem's I/O can take to the target: kernel → proxy → target, one user-space hop, where
 * nbdfuse in front of the proxy made two (and a socket hop with its copies between them).
 */
export class FuseLoopAttacher extends LoopOnFuseAttacher implements Attacher {
  readonly kind = 'fuse-loop' as const;

  async attach(o: { dir: string; proxy: ProxyRef; size: number }): Promise<AttachedDevice> {
    const file = fuseFileOf(o.dir);
    return this.bindOrUndo({ kind: this.kind, device: '', file }, o.size, async () => {
      await unmountFuse(file); // a mount left by a crash
      await writeFile(file, '', { mode: 0o600, flag: 'a' });
      await serveFileFromProxy(o.proxy, file);
    });
  }

  async detach(d: AttachedDevice): Promise<void> {
    if (!d.file) return;
    // The FUSE mount must stay until no loop device uses its file: unmounting it first would leave
    // the loop device bound to a file nobody serves. Its proxy sees the unmount and stops serving.
    await unbindLoops(d.file);
    await unmountFuse(d.file);
    await rm(d.file, { force: true });
  }

  async problem(d: AttachedDevice, proxy: ProxyStatus): Promise<string | undefined> {
    if (proxy.file !== d.file) return `the path proxy no longer serves ${d.file}`;
    return this.loopProblem(d);
  }
}
