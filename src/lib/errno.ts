/**
 * The Linux errno values our wire protocols carry: NBD replies (whose spec mandates Linux
 * numbering) and FUSE replies (negated). One table, so an error a block backend reports
 * (errnoOf in nbd/backend.ts) means the same on either wire.
 */
export const Errno = {
  EPERM: 1,
  ENOENT: 2,
  EIO: 5,
  ENOMEM: 12,
  EINVAL: 22,
  ENOSPC: 28,
  ENOSYS: 38,
  EPROTO: 71,
  EOVERFLOW: 75,
  ENOTSUP: 95,
  ESHUTDOWN: 108,
} as const;

/** `ENOSPC (28)`: an errno as a reader knows it. */
export function errnoName(errno: number): string {
  const name = Object.entries(Errno).find(([, v]) => v === errno)?.[0];
  return name ? `${name} (${errno})` : `errno ${errno}`;
}

/**
 * A Node.js fs error's message without the path it names (`EROFS: read-only file system`), so the
 * same failure reads the same wherever it happens (a random temporary name made it differ each time).
 */
export function withoutPath(err: Error): string {
  return err.message.replace(/, \w+ '.*'$/, '');
}
