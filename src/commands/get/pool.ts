import { Args } from '@oclif/core';
import { POOL_TYPES, poolListing } from '../../lib/catalog/views/pools.js';
import { GetCommand } from '../../lib/get-command.js';

export default class GetPool extends GetCommand {
  static override description = 'show one pool';
  static override examples = ['<%= config.bin %> <%= command.id %> pool-1-on-node-1'];
  static override args = { id: Args.string({ description: 'pool id', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(GetPool);
    await this.showOne('pool', args.id, POOL_TYPES, (s) => poolListing(s, (p) => p.id === args.id), {
      live: ['pools'],
    });
  }
}
