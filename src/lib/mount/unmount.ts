import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mountsAt, readMountTable } from './mountinfo.js';

const run = promisify(execFile);

export async function isMountPoint(target: string): Promise<boolean> {
  return mountsAt(await readMountTable(), target).length > 0;
}

/**
 * Unmount everything stacked at `target`. A plain umount first; a busy or dead mount falls back to
 * a lazy detach (umount -l), which always succeeds for a mount that exists. Not mounted = success.
 */
export async function unmountAll(
  target: string,
  { lazyFallback = true } = {},
): Promise<{ lazy: boolean; count: number }> {
  let lazy = false;
  let count = 0;
  for (let i = 0; i < 16 && (await isMountPoint(target)); i++) {
    try {
      // -c (no canonicalisation): umount would otherwise stat the path, which blocks on a hung FUSE daemon.
      await run('umount', ['-c', target], { timeout: 10_000 });
    } catch (err) {
      if (!(await isMountPoint(target))) break;
      if (!lazyFallback) throw new Error(`umount ${target} failed: ${stderrOf(err)}`);
      try {
        await run('umount', ['-c', '-l', target], { timeout: 10_000 });
        lazy = true;
      } catch (err2) {
        if (await isMountPoint(target)) throw new Error(`umount -l ${target} failed: ${stderrOf(err2)}`);
      }
    }
    count++;
  }
  return { lazy, count };
}

function stderrOf(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(err)).trim();
}

/** Detach only the topmost mount at `target` (lazily): used to peel a dead layer off a stack. */
export async function detachTop(target: string): Promise<void> {
  if (await isMountPoint(target)) await run('umount', ['-c', '-l', target], { timeout: 10_000 });
}
