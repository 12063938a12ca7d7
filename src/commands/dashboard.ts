import { Flags } from '@oclif/core';
import { StorctlCommand } from '../lib/command.js';
import { runDashboard } from '../lib/dashboard/run.js';
import { UsageError } from '../lib/errors.js';
import { defaultMounterStateDir } from '../lib/mount/state-dir.js';

export default class Dashboard extends StorctlCommand {
  static override summary =
    'live terminal view of the cluster: nodes, pools, volumes, switchovers, S3 mounts and events, kept current by a store watch (and core REST when it answers)';
  static override description =
    `Keys: tab / shift-tab or ←/→ switch panels (1-6 jump), ↑/↓ PgUp/PgDn Home/End move, / filters the panel (enter keeps, esc clears), enter opens a volume's details (esc back), q quits.
Reads the store once, then follows a watch of the cluster's keys; redraws at most every 150 ms. Needs a terminal: without one it exits 2 and names \`storctl get volumes -o json\`. NO_COLOR turns colours off.`;
  static override examples = [
    '<%= config.bin %> dashboard',
    '<%= config.bin %> dashboard --store etcd://127.0.0.1:2379',
    '<%= config.bin %> dashboard --store sqlite:/var/lib/storctl/store.db --cluster-id my-cluster',
  ];
  static override flags = {
    'state-dir': Flags.string({
      description: "the mounter state directory whose records fill the S3 mounts panel (this machine's)",
      env: 'STORCTL_MOUNTER_STATE_DIR',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Dashboard);
    if (this.globals.output === 'json' || this.globals.output === 'yaml')
      throw new UsageError(
        `the dashboard is a terminal view; for ${this.globals.output} use \`storctl get volumes -o ${this.globals.output}\``,
        {
          suggestions: [`storctl get volumes -o ${this.globals.output}`],
        },
      );
    await runDashboard({
      storeUrl: this.globals.storeUrl,
      tls: this.globals.tls,
      keySpace: this.globals.keySpace,
      mounterStateDir: flags['state-dir'] ?? defaultMounterStateDir(),
    });
  }
}
