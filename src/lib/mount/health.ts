import { opendir, statfs } from 'node:fs/promises';

/**
 * errno codes that mean "a mount is here but its daemon is gone or hung" (mount-utils'
 * IsCorruptedMnt list). ENOTCONN is what a FUSE mount answers after its daemon was killed.
 */
const CORRUPTED = new Set([
  'ENOTCONN',
  'ESTALE',
  'EIO',
  'EACCES',
  'EHOSTDOWN',
  'EWOULDBLOCK',
  'EAGAIN',
  'ECONNABORTED',
]);

export function isCorruptedMountError(err: unknown): boolean {
  return CORRUPTED.has((err as NodeJS.ErrnoException)?.code ?? '');
}

export type PathHealth =
  | { state: 'ok' }
  | { state: 'missing' }
  | { state: 'corrupted'; code: string }
  | { state: 'error'; code: string; message: string };

/**
 * Probe a path the way a dead FUSE daemon cannot fake: statfs and a directory read both go to the
 * daemon (a plain stat() of the mount root is answered from cached attributes for about a second).
 */
export async function probePath(path: string): Promise<PathHealth> {
  try {
    await statfs(path);
    const dir = await opendir(path);
    try {
      await dir.read();
    } finally {
      await dir.close().catch(() => {});
    }
    return { state: 'ok' };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'UNKNOWN';
    if (code === 'ENOENT') return { state: 'missing' };
    if (isCorruptedMountError(err)) return { state: 'corrupted', code };
    return { state: 'error', code, message: (err as Error).message };
  }
}
