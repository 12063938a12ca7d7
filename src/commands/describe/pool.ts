import { Args } from '@oclif/core';
import { missingRecord } from '../../lib/catalog/cluster.js';
import { POOL_PAGE_TYPES, poolPage } from '../../lib/describe/pool.js';
import { DescribeCommand } from '../../lib/describe-command.js';

export default class DescribePool extends DescribeCommand {
  static override description =
    'everything about one pool: node, disk, capacity and usage, committed size, its replicas, recent events';
  static override examples = ['<%= config.bin %> <%= command.id %> pool-node-1'];
  static override args = { id: Args.string({ description: 'pool id', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(DescribePool);
    const { state, events, live } = await this.gather(POOL_PAGE_TYPES, ['pools'], {
      mentioning: { ids: [args.id], types: ['ReplicaSpec'] },
    });
    const p = state.specs.PoolSpec?.get(args.id);
    if (!p) throw missingRecord(state, 'PoolSpec', 'pool', args.id);
    this.printPage(poolPage(state, p, events, live));
  }
}
