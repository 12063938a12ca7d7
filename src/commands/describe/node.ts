import { Args } from '@oclif/core';
import { NODE_PAGE_TYPES, nodePage } from '../../lib/describe/node.js';
import { DescribeCommand } from '../../lib/describe-command.js';
import { NotFoundError } from '../../lib/errors.js';

export default class DescribeNode extends DescribeCommand {
  static override description =
    'everything about one io-engine node: liveness, cordon and drain labels, pools, the targets it serves, recent events';
  static override examples = [
    '<%= config.bin %> <%= command.id %> node-1',
    '<%= config.bin %> <%= command.id %> node-1 -o json',
  ];
  static override args = { id: Args.string({ description: 'node id', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(DescribeNode);
    const { state, events, live } = await this.gather(NODE_PAGE_TYPES, ['pools', 'volumes']);
    const n = state.specs.NodeSpec?.get(args.id);
    if (!n) throw new NotFoundError('node', args.id, { suggestions: ['storctl get nodes'] });
    this.printPage(nodePage(state, n, events, live));
  }
}
