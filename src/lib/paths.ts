import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where storctl keeps its state on this machine: `$XDG_DATA_HOME/storctl`, else
 * `~/.local/share/storctl`. `storctl up` and every flagless operator command agree on it, which is
 * how a command finds the cluster `storctl up` started.
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.STORCTL_DATA_DIR) return env.STORCTL_DATA_DIR;
  const xdg = env.XDG_DATA_HOME?.startsWith('/') ? env.XDG_DATA_HOME : join(homedir(), '.local', 'share');
  return join(xdg, 'storctl');
}

/** The embedded store of a data dir. */
export function defaultStoreUrl(dataDir = defaultDataDir()): string {
  return `sqlite:${join(dataDir, 'store.db')}`;
}
