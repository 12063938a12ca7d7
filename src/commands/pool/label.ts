import { Args, Flags } from '@oclif/core';
import { UsageError } from '../../lib/errors.js';
import { poolListing } from '../../lib/rest/cli.js';
import type { Pool } from '../../lib/rest/types.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class PoolLabel extends RestCommand {
  static override description =
    'set (KEY=VALUE) or remove (KEY-) a pool label, used by volume pool topology (labelled inclusion/exclusion)';
  static override examples = [
    '<%= config.bin %> pool label pool-1 zone=a',
    '<%= config.bin %> pool label pool-1 zone=b --overwrite',
    '<%= config.bin %> pool label pool-1 zone-',
    '<%= config.bin %> pool label pool-1 class=fast -o json',
  ];
  static override args = {
    pool: Args.string({ description: 'pool id', required: true }),
    label: Args.string({ description: 'KEY=VALUE to set, KEY- to remove', required: true }),
  };
  static override flags = {
    overwrite: Flags.boolean({
      description: 'replace the value of a key the pool already has',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PoolLabel);
    const eq = args.label.indexOf('=');
    const removing = eq < 0 && args.label.endsWith('-') && args.label.length > 1;
    if (eq <= 0 && !removing) throw new UsageError(`label '${args.label}' is neither KEY=VALUE nor KEY-`);
    const pool = encodeURIComponent(args.pool);
    const out = removing
      ? await this.client.call<Pool>(
          'DELETE',
          `/pools/${pool}/label/${encodeURIComponent(args.label.slice(0, -1))}`,
        )
      : await this.client.call<Pool>(
          'PUT',
          `/pools/${pool}/label/${encodeURIComponent(args.label.slice(0, eq))}=${encodeURIComponent(args.label.slice(eq + 1))}`,
          undefined,
          { overwrite: flags.overwrite },
        );
    const listing = poolListing([out]);
    listing.columns.push({
      header: 'LABELS',
      get: (p) =>
        Object.entries(p.spec?.labels ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
    });
    this.print(listing);
  }
}
