import { statfs } from 'node:fs/promises';
import { status } from '@grpc/grpc-js';
import { GrpcError } from '../../lib/grpc/status.js';
import { CommandError, run } from './exec.js';

/** Filesystems csi-node formats and grows. */
export const FS_TYPES = ['ext4', 'xfs'] as const;
export type FsType = (typeof FS_TYPES)[number];

/** The filesystem on a device (blkid low-level probe); undefined when the device is blank. */
export async function fsTypeOf(device: string): Promise<string | undefined> {
  // blkid exits 2 when it finds nothing identifiable.
  const { stdout, code } = await run(['blkid', '-p', '-o', 'value', '-s', 'TYPE', device], {
    okCodes: [0, 2],
  });
  return code === 0 ? stdout.trim() || undefined : undefined;
}

/** Format a blank device (no discard: a fresh thin volume reads as zeroes already). */
export async function mkfs(device: string, fsType: FsType): Promise<void> {
  try {
    if (fsType === 'ext4')
      await run(['mkfs.ext4', '-q', '-F', '-E', 'nodiscard', device], { timeoutMs: 300_000 });
    else await run(['mkfs.xfs', '-q', '-K', device], { timeoutMs: 300_000 });
  } catch (err) {
    // A volume too small for the filesystem the request names is the caller's mistake, not ours.
    const why =
      err instanceof CommandError
        ? err.stderr.split('\n').find((l) => /must be larger than|too small/i.test(l))
        : undefined;
    if (why)
      throw new GrpcError(
        status.INVALID_ARGUMENT,
        `the volume is too small for ${fsType} (${why.trim()}); ask for ext4 or a larger volume`,
      );
    throw err;
  }
}

export async function mountFs(device: string, path: string, fsType: string, flags: string[]): Promise<void> {
  // A clone carries its source's xfs UUID, and xfs refuses to mount a second filesystem with a UUID
  // already mounted ("duplicate UUID"): a volume restored from a snapshot could not be staged on a
  // node where its source is. nouuid skips only that check.
  const all = fsType === 'xfs' && !flags.includes('nouuid') ? [...flags, 'nouuid'] : flags;
  const opts = all.length ? ['-o', all.join(',')] : [];
  await run(['mount', '-t', fsType, ...opts, device, path]);
}

/** Bind `source` (a directory or a device) at `target`; read-only binds need a remount (mount(8) does it). */
export async function bindMount(source: string, target: string, readonly: boolean): Promise<void> {
  await run(['mount', '--bind', ...(readonly ? ['-o', 'ro'] : []), source, target]);
}

/** Grow a mounted filesystem to its device's size. */
export async function growFs(fsType: string, device: string, mountPath: string): Promise<void> {
  if (fsType === 'xfs') await run(['xfs_growfs', mountPath], { timeoutMs: 300_000 });
  else await run(['resize2fs', device], { timeoutMs: 300_000 });
}

/**
 * Check an ext4 filesystem before it is mounted, as Kubernetes' mount-utils does (`fsck -a`): one
 * left with errors (it went read-only after I/O errors, its node crashed) is repaired, a clean one
 * costs a look at its superblock. Errors e2fsck cannot fix unattended refuse the stage.
 */
export async function checkExt4(device: string): Promise<void> {
  // 0: clean, 1: fixed, 2: fixed (a reboot is advised: for a mounted root, not this); 4: left as is.
  const { code, stdout } = await run(['e2fsck', '-p', device], { timeoutMs: 300_000, okCodes: [0, 1, 2, 4] });
  if (code === 4)
    throw new GrpcError(
      status.FAILED_PRECONDITION,
      `the ext4 filesystem on ${device} has errors e2fsck -p cannot fix unattended (${stdout.trim().split('\n').at(-1) ?? ''}); repair it by hand with e2fsck before staging the volume`,
    );
}

/**
 * Grow an unmounted ext4 filesystem to its device (a volume grown while it was not staged, or
 * whose online growth this process may not do): fsck first, as resize2fs requires.
 */
export async function growExt4Offline(device: string): Promise<boolean> {
  const { stdout } = await run(['dumpe2fs', '-h', device], { timeoutMs: 60_000 });
  const count = Number(/^Block count:\s+(\d+)/m.exec(stdout)?.[1]);
  const size = Number(/^Block size:\s+(\d+)/m.exec(stdout)?.[1]);
  if (!count || !size || count * size + size > (await deviceSize(device))) return false;
  // e2fsck -p exits 1 when it fixed something: that is fine.
  await run(['e2fsck', '-f', '-p', device], { timeoutMs: 300_000, okCodes: [0, 1] });
  await run(['resize2fs', device], { timeoutMs: 300_000 });
  return true;
}

export const deviceSize = async (device: string) =>
  Number((await run(['blockdev', '--getsize64', device])).stdout.trim());

export async function fsUsage(path: string) {
  const s = await statfs(path);
  return {
    totalBytes: s.blocks * s.bsize,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    totalInodes: s.files,
    freeInodes: s.ffree,
    usedInodes: s.files - s.ffree,
  };
}

/** fsfreeze -f; true when this call froze it (false: it was frozen already). */
export async function freezeFs(path: string): Promise<boolean> {
  try {
    await run(['fsfreeze', '-f', path]);
    return true;
  } catch (err) {
    if (/busy/i.test((err as Error).message)) return false;
    throw err;
  }
}

/** fsfreeze -u; true when it was frozen. */
export async function thawFs(path: string): Promise<boolean> {
  try {
    await run(['fsfreeze', '-u', path]);
    return true;
  } catch (err) {
    if (/invalid argument/i.test((err as Error).message)) return false;
    throw err;
  }
}
