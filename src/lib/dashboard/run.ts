import { createElement as h } from 'react';
import { liveRestUrl } from '../catalog/live.js';
import type { StoreSelection } from '../catalog/with-store.js';
import { UsageError } from '../errors.js';
import type { KeySpace } from '../store/keys.js';
import { openStore } from '../store/open.js';
import { DashboardModel } from './model.js';

export interface RunDashboardOptions extends StoreSelection {
  keySpace: KeySpace;
  mounterStateDir: string;
}

/** The dashboard needs a terminal on both ends: keys come in on stdin, frames go out on stdout. */
export function requireTerminal(stdin = process.stdin, stdout = process.stdout): void {
  if (stdin.isTTY && stdout.isTTY) return;
  throw new UsageError(
    'storctl dashboard needs an interactive terminal (stdin and stdout must be a TTY); for the same data in a script use `storctl get volumes -o json`',
    {
      suggestions: [
        'storctl get volumes -o json',
        'storctl get nodes -o json',
        'storctl events --watch -o json',
      ],
    },
  );
}

/** Run the dashboard in this terminal until `q` (or Ctrl-C); the store and the watch are closed after. */
export async function runDashboard(options: RunDashboardOptions): Promise<void> {
  requireTerminal();
  const store = await openStore(options.storeUrl, { tls: options.tls, existing: true });
  const model = new DashboardModel({
    store,
    space: options.keySpace,
    restUrl: liveRestUrl(options.storeUrl),
    mounterStateDir: options.mounterStateDir,
  });
  try {
    await model.start();
    const { render, Dashboard } = await loadInk();
    const app = render(h(Dashboard, { model, source: store.endpoint }), { exitOnCtrlC: true });
    await app.waitUntilExit();
  } finally {
    await model.stop();
    await store.close();
  }
}

/**
 * Ink draws only the final frame when CI or CONTINUOUS_INTEGRATION is set (is-in-ci, read once when
 * ink loads). The dashboard runs only on a terminal, where live frames are the point, so those
 * variables are dropped before ink is loaded, which is why it is imported here and not at the top.
 */
async function loadInk() {
  delete process.env.CI;
  delete process.env.CONTINUOUS_INTEGRATION;
  const [{ render }, { Dashboard }] = await Promise.all([import('ink'), import('./Dashboard.js')]);
  return { render, Dashboard };
}
