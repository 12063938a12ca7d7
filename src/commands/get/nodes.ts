import { Args } from '@oclif/core';
import { NODE_TYPES, nodeListing } from '../../lib/catalog/views/nodes.js';
import { parseSelector } from '../../lib/cli-args.js';
import { GetCommand, selectorFlag } from '../../lib/get-command.js';
import { type NodeSpec, nodeMatches } from '../../lib/specs/index.js';

export default class GetNodes extends GetCommand {
  static override description = 'list io-engine nodes: endpoint, liveness, cordon and drain state';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --selector zone=a -o wide',
  ];
  static override flags = { selector: selectorFlag };
  static override args = { id: Args.string({ description: 'one node id (as `get node ID`)' }) };
  static override aliases = ['get:no'];

  async run(): Promise<void> {
    const { args, flags } = await this.parse(GetNodes);
    if (args.id) {
      const id = args.id;
      return this.showOne('node', id, NODE_TYPES, (s) => nodeListing(s, (n) => n.id === id));
    }
    const selector = parseSelector(flags.selector);
    const filter = (n: NodeSpec) => !selector || nodeMatches(n, selector);
    await this.show(NODE_TYPES, (state) => nodeListing(state, filter));
  }
}
