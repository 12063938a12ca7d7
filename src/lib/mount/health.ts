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
export async function probePath(path: string, timeoutMs = 5000): Promise<PathHealth> {
  // A hung daemon (alive, never answering) blocks these calls; after timeoutMs it counts as corrupted.
  // The blocked call itself returns once the mount is detached or the daemon ends.
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<PathHealth>((resolve) => {
    timer = setTimeout(() => resolve({ state: 'corrupted', code: 'ETIMEDOUT' }), timeoutMs);
  });
  try {
    return await Promise.race([probeOnce(path), hung]);
  } finally {
    clearTimeout(timer);
  }
}

async function probeOnce(path: string): Promise<PathHealth> {
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
