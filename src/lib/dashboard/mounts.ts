import { readFile } from 'node:fs/promises';
import { stateLayout } from '../mount/s3-volumes.js';
import type { MountRecord } from '../mount/state.js';

/**
 * The S3 mounts slot: the mounter's state file on this machine when it is readable. (The mounter
 * keeps no record in the store, so this is read on the machine the dashboard runs on.)
 */
export type MountSlot =
  | { kind: 'records'; file: string; mounts: MountRecord[] }
  | { kind: 'none'; file: string; reason: string };

export const mountStateFile = (stateDir: string) => stateLayout(stateDir).stateFile;

export async function readMountSlot(stateDir: string): Promise<MountSlot> {
  const file = mountStateFile(stateDir);
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as { mounts?: Record<string, MountRecord> };
    const mounts = Object.values(parsed.mounts ?? {}).sort((a, b) => a.target.localeCompare(b.target));
    return { kind: 'records', file, mounts };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no mounter state' : `no mounter state (${(err as Error).message})`;
    return { kind: 'none', file, reason };
  }
}
