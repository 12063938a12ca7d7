import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import { defaultDataDir } from '../paths.js';

/** Where the mounter keeps mount records, credential files and daemon logs (flag and doctor agree). */
export function defaultMounterStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.STORCTL_MOUNTER_STATE_DIR ?? join(defaultDataDir(env), 'mounter');
}

/**
 * `<state dir>/roots.json`: the directories the mounter using this state dir confines targets to
 * (its `--root`s), written at every start. `doctor mounts` scopes itself with it: the mounts and
 * FUSE daemons of another mounter on the same machine (another cluster's) are not this one's.
 */
export const rootsFile = (stateDir: string) => join(stateDir, 'roots.json');

export async function writeMounterRoots(stateDir: string, roots: string[]): Promise<void> {
  await writeFileAtomic(rootsFile(stateDir), `${JSON.stringify({ roots: roots.map((r) => resolve(r)) })}\n`);
}

/** The roots a mounter recorded in this state dir; null when none did (never ran, or older). */
export async function readMounterRoots(stateDir: string): Promise<string[] | null> {
  try {
    const v = JSON.parse(await readFile(rootsFile(stateDir), 'utf8')) as { roots?: unknown };
    return Array.isArray(v.roots) && v.roots.every((r) => typeof r === 'string') ? v.roots : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`cannot read ${rootsFile(stateDir)}: ${(err as Error).message}`);
  }
}
