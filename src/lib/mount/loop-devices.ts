import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';

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
 * its FUSE server is dead). A FUSE mount detached lazily leaves its file shown as `/<name>`: csi-node
 * names such a file after the volume's uuid, so that still identifies it.
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
