import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Write text so a crash leaves either the old or the new content, readable by the owner only
 * (0600): unique temp file in the same directory, fsync, rename, fsync of the directory. A reader
 * sees the old or the new file, never half of one.
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  // Unique per write: two writers never share (and truncate) one temp file.
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  try {
    const fh = await open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await fsyncPath(dirname(path));
}
