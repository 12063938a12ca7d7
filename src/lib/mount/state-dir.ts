import { join } from 'node:path';
import { defaultDataDir } from '../paths.js';

/** Where the mounter keeps mount records, credential files and daemon logs (flag and doctor agree). */
export function defaultMounterStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.STORCTL_MOUNTER_STATE_DIR ?? join(defaultDataDir(env), 'mounter');
}
