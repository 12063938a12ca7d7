import { Args } from '@oclif/core';
import { NODE_TYPES, nodeListing } from '../../lib/catalog/views/nodes.js';
import { GetCommand } from '../../lib/get-command.js';

export default class GetNode extends GetCommand {
  static override description = 'show one io-engine node';
  static override examples = ['<%= config.bin %> <%= command.id %> node-1 -o wide'];
  static override args = { id: Args.string({ description: 'node id', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(GetNode);
    await this.showOne('node', args.id, NODE_TYPES, (s) => nodeListing(s, (n) => n.id === args.id));
  }
}
