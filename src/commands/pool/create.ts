import { Args, Flags } from '@oclif/core';
import { parseLabels } from '../../lib/cli-args.js';
import { poolListing, sizeArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class PoolCreate extends RestCommand {
  static override description =
    "create a pool on a node's io-engine: a directory holding replicas, with a declared capacity";
  static override examples = [
    '<%= config.bin %> pool create node-1 pool-1 --capacity 10GiB',
    '<%= config.bin %> pool create node-1 pool-ssd --disk /srv/ssd/storctl --capacity 100GiB --label class=ssd',
  ];
  static override args = {
    node: Args.string({ description: 'node id', required: true }),
    id: Args.string({ description: 'pool id', required: true }),
  };
  static override flags = {
    disk: Flags.string({
      description: 'absolute pool directory on the node (default: <io-engine pool-dir>/<pool id>)',
      default: '',
    }),
    capacity: Flags.string({ description: 'pool capacity, e.g. 10GiB', required: true }),
    label: Flags.string({ description: 'pool label KEY=VALUE (repeatable)', multiple: true }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PoolCreate);
    const labels = parseLabels(flags.label);
    const p = await this.client.createPool(args.node, args.id, {
      disks: [flags.disk],
      capacity: sizeArg('capacity', flags.capacity),
      ...(labels ? { labels } : {}),
    });
    this.print(poolListing([p]));
  }
}
