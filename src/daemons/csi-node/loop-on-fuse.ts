import { readFile, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { loopBackingFile, loopsOf } from '../../lib/mount/loop-devices.js';
import { sleep, waitUntilGone } from '../../lib/mount/poll.js';
import { isMountPoint, unmountAll } from '../../lib/mount/unmount.js';
import type { AttachedDevice } from './attacher.js';
import { run } from './exec.js';

/**
 * A loop device on a FUSE file: what both FUSE attachers make of a volume. The file is far larger
 * than any volume (FUSE_FILE_SIZE); the loop device is limited (LOOP_SET_STATUS64 lo_sizelimit) to
 * the volume's size, so growing a volume online is one ioctl on the loop device (nbdfuse, for one,
 * learns an export's size once, at connect, and never again).
 */
export const FUSE_FILE_SIZE = 2 ** 44; // 16 TiB

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

/**
 * Bind a free loop device to `file`, limited to `size` bytes. `losetup -f`: another process can
 * take the free device between losetup's lookup and its bind (EBUSY); a few more tries find the
 * next one.
 */
export async function bindLoop(file: string, size: number): Promise<string> {
  // Direct I/O: no second page cache of the FUSE file under the loop device's own (about twice
  // the throughput, and a write reaches the proxy when the filesystem issues it).
  const argv = ['losetup', '-f', '--show', '--direct-io=on', '--sizelimit', String(size), file];
  for (let attempt = 1; ; attempt++) {
    try {
      const device = (await run(argv)).stdout.trim();
      if (!/^\/dev\/loop\d+$/.test(device)) throw new Error(`losetup printed '${device}', not a loop device`);
      await raiseLargestRequest(device);
      return device;
    } catch (err) {
      if (attempt >= 5 || !/busy/i.test((err as Error).message)) throw err;
      await sleep(20 * attempt);
    }
  }
}

/**
 * Let the loop device pass requests of up to 1 MiB (the largest FUSE request) to its file. The
 * kernel's own limit for a loop device on a FUSE file was as low as 64 KiB here: a filesystem's
 * 1 MiB read became sixteen FUSE round trips one after another, at about half the throughput.
 * Best effort: a sysfs that cannot be written leaves the device working, only slower.
 */
async function raiseLargestRequest(device: string): Promise<void> {
  const queue = `/sys/block/${basename(device)}/queue`;
  try {
    const hw = Number((await readFile(`${queue}/max_hw_sectors_kb`, 'utf8')).trim());
    if (hw > 0) await writeFile(`${queue}/max_sectors_kb`, String(Math.min(hw, 1024)));
  } catch {}
}

/**
 * Unbind every loop device bound to `file` and wait until they are gone. A device still open (a
 * filesystem on it not yet released) is cleared when its last user goes.
 */
export async function unbindLoops(file: string): Promise<void> {
  // Only loop devices bound to our file: a recorded device number may have been reused.
  for (const dev of await loopsOf(file)) {
    await run(['losetup', '-d', dev]).catch(async (err) => {
      if ((await loopBackingFile(dev)) !== undefined) throw err;
    });
  }
  if (!(await waitUntilGone(async () => (await loopsOf(file)).length > 0, 15_000, 20)))
    throw new Error(`${(await loopsOf(file)).join(', ')} still bound to ${file}: something holds it open`);
}

/** Make `device` (bound to `file`) show `size` bytes. */
export async function growLoop(device: string, file: string, size: number): Promise<void> {
  if ((await loopBackingFile(device)) !== file) throw new Error(`${device} is not bound to ${file}`);
  await run(['perl', '-e', SET_SIZELIMIT, device, String(size)]);
}

/**
 * Unmount the FUSE mount at `target` once no loop device uses its file (a plain umount, retried
 * while the last loop user lets go; lazily as a last resort).
 */
export async function unmountFuse(target: string): Promise<void> {
  for (let i = 0; i < 50 && (await isMountPoint(target)); i++) {
    try {
      await run(['umount', '-c', target], { timeoutMs: 10_000 });
    } catch {
      await sleep(50);
    }
  }
  if (await isMountPoint(target)) await unmountAll(target);
}

/** What both FUSE attachers share: a file far larger than the volume, a loop device sized on it. */
export abstract class LoopOnFuseAttacher {
  advertisedSize(): number {
    return FUSE_FILE_SIZE;
  }

  grow(d: AttachedDevice, size: number): Promise<void> {
    return growLoop(d.device, d.file ?? '', size);
  }

  abstract detach(d: AttachedDevice): Promise<void>;

  /**
   * The end of an attach: `prepare` (until the FUSE file is served), then a loop device bound to
   * `d.file`. A failure anywhere undoes what was done (detach) before it is thrown.
   */
  protected async bindOrUndo(d: AttachedDevice, size: number, prepare: () => Promise<void>) {
    try {
      await prepare();
      d.device = await bindLoop(d.file ?? '', size);
      return d;
    } catch (err) {
      await this.detach(d).catch(() => {});
      throw err;
    }
  }

  /** What is wrong with the loop device itself, if anything. */
  protected async loopProblem(d: AttachedDevice): Promise<string | undefined> {
    if ((await loopBackingFile(d.device)) !== d.file) return `${d.device} is no longer bound to ${d.file}`;
    return undefined;
  }
}
