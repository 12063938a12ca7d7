import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * A flagless `storctl up` as a user runs it: a private XDG_DATA_HOME and none of the STORCTL_*
 * overrides of the test's environment, so commands find the cluster through its endpoints file.
 */
export class UpHome {
  readonly home = mkdtempSync(join(tmpdir(), 'storctl-up-'));
  readonly env: NodeJS.ProcessEnv = {
    XDG_DATA_HOME: this.home,
    STORCTL_STORE: undefined,
    STORCTL_REST: undefined,
    STORCTL_CLUSTER_ID: undefined,
    STORCTL_DATA_DIR: undefined,
  };

  /** Start `up` (REST on a free port, 1 GiB pools, then `extra` flags) and wait for its ready line. */
  async start(extra: string[] = []): Promise<StorctlProcess> {
    const up = new StorctlProcess(
      ['up', '--rest', '127.0.0.1:0', '--pool-capacity', '1GiB', ...extra],
      this.env,
    );
    try {
      await waitFor(async () => /^ready: /m.test(up.output) || (await up.failIfExited('storctl up')), {
        what: 'storctl up ready',
        timeoutMs: 60_000,
      });
    } catch (err) {
      await up.kill('SIGINT'); // it stops the roles it started; a test that fails here leaves none
      throw err;
    }
    return up;
  }

  /** The endpoints file `up` keeps current (REST, sockets, each role's PID). */
  // biome-ignore lint/suspicious/noExplicitAny: the file's fields, as each test reads them
  endpoints(): Record<string, any> {
    return JSON.parse(readFileSync(join(this.home, 'storctl', 'endpoints.json'), 'utf8'));
  }
}
