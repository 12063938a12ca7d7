import { readCluster } from '../lib/catalog/cluster.js';
import { withStore } from '../lib/catalog/with-store.js';
import { StorctlCommand } from '../lib/command.js';

interface Component {
  component: string;
  version: string | null;
  where: string;
}

export default class Version extends StorctlCommand {
  static override description =
    'the version of this CLI and of every running io-engine (from their liveness records in the store)';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> -o json',
  ];

  static override templateOutput = true;

  async run(): Promise<void> {
    await this.parse(Version);
    const rows: Component[] = [
      { component: 'storctl (this CLI)', version: this.config.version, where: `node ${process.version}` },
    ];
    // The store may be unreachable: the CLI's own version is still worth printing.
    const state = await withStore(this.globals, (store) =>
      readCluster(store, this.globals.keySpace, ['NodeLiveness']),
    ).catch((err: Error) => {
      this.logToStderr(`note: running daemons unknown: ${err.message}`);
      return null;
    });
    for (const [node, live] of [...(state?.liveness ?? new Map()).entries()].sort(([a], [b]) =>
      a.localeCompare(b),
    ))
      rows.push({
        component: `io-engine ${node}`,
        version: live.version ?? null,
        where: live.grpcEndpoint ?? '',
      });
    this.print({
      rows,
      columns: [
        { header: 'COMPONENT', get: (r) => r.component },
        { header: 'VERSION', get: (r) => r.version },
        { header: 'WHERE', get: (r) => r.where },
      ],
    });
  }
}
