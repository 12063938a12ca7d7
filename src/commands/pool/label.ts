import { Args, Flags } from '@oclif/core';
import { labelsText } from '../../lib/catalog/views/volumes.js';
import { parseLabelEdit } from '../../lib/cli-args.js';
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

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PoolLabel);
    const label = parseLabelEdit(args.label);
    const path = `/pools/${encodeURIComponent(args.pool)}/label/${encodeURIComponent(label.key)}`;
    const out =
      label.op === 'set'
        ? await this.client.call<Pool>('PUT', `${path}=${encodeURIComponent(label.value)}`, undefined, {
            overwrite: flags.overwrite,
          })
        : await this.client.call<Pool>('DELETE', path);
    const listing = poolListing([out]);
    listing.columns.push({ header: 'LABELS', get: (p) => labelsText(p.spec?.labels) });
    this.print(listing);
  }
}
