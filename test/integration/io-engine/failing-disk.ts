import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '../../helpers/wait.js';
import { run, startTool } from './nbd-tools.js';

/** An ext4 filesystem whose disk fails every request with EIO while `fail()` is in effect. */
export interface FailingDisk {
  fail(): Promise<void>;
  heal(): Promise<void>;
  /** Unmount and take the layers down (each by what this helper started). */
  dispose(): Promise<void>;
}

/**
 * Mount, at `mountpoint`, ext4 on a loop device over nbdfuse over nbdkit's file plugin with its
 * error filter, which fails every request while its trigger file exists: a disk that fails (and
 * recovers) under a running filesystem, as a flaky cable or controller does. Parts live in `dir`.
 */
export async function mountFailingDisk(
  dir: string,
  mountpoint: string,
  bytes = 256 << 20,
): Promise<FailingDisk> {
  await mkdir(dir, { recursive: true });
  const image = join(dir, 'disk.img');
  const socket = join(dir, 'nbdkit.sock');
  const trigger = join(dir, 'fail-now');
  const file = join(dir, 'nbd');
  await writeFile(image, '');
  await run('truncate', ['-s', String(bytes), image]);
  await run('mkfs.ext4', ['-q', '-F', image]);
  const nbdkit = startTool('nbdkit', [
    '-f',
    '--exit-with-parent',
    '-U',
    socket,
    '--filter=error',
    'file',
    image,
    'error=EIO',
    'error-rate=100%',
    `error-file=${trigger}`,
  ]);
  let fuse: ReturnType<typeof startTool> | undefined;
  let loop: string | undefined;
  let mounted = false;
  /** Every layer is taken down even when one fails; the first failure is thrown at the end. */
  const dispose = async () => {
    const failures: unknown[] = [];
    const step = (f: () => Promise<unknown>) => f().catch((err) => failures.push(err));
    // A just-stopped io-engine's files may close a moment later: the unmount is retried.
    if (mounted)
      await step(() => waitFor(() => run('umount', [mountpoint]).then(() => true), { what: 'unmount' }));
    if (loop) await step(() => run('losetup', ['-d', loop!]));
    if (fuse) {
      await step(() => run('fusermount3', ['-u', file]));
      fuse.kill();
      await step(() =>
        waitFor(() => fuse!.child.exitCode !== null || fuse!.child.signalCode !== null, {
          what: 'nbdfuse to exit',
        }),
      );
    }
    nbdkit.kill();
    await step(() => rm(dir, { recursive: true, force: true }));
    if (failures.length) throw failures[0];
  };
  try {
    await waitFor(async () => (await stat(socket).catch(() => null)) ?? nbdkit.failIfExited(), {
      what: 'nbdkit listening',
    });
    await writeFile(file, '');
    fuse = startTool('nbdfuse', [file, '--unix', socket]);
    await waitFor(async () => ((await stat(file)).size === bytes ? true : fuse!.failIfExited()), {
      what: 'nbdfuse serving the disk',
    });
    loop = (await run('losetup', ['-f', '--show', file])).trim();
    await mkdir(mountpoint, { recursive: true });
    // No periodic journal commit (ext4's is every 5 s): one that falls inside a test's failure window
    // (longer on a loaded machine) aborts the journal and leaves the pool read-only, which only the
    // tests that ask for it (a sync while the disk fails) should see.
    await run('mount', ['-o', 'commit=600', loop, mountpoint]);
    mounted = true;
  } catch (err) {
    await dispose().catch(() => {});
    throw err;
  }
  return {
    fail: () => writeFile(trigger, ''),
    heal: () => rm(trigger, { force: true }),
    dispose,
  };
}
