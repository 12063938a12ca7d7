import { Args, Flags } from '@oclif/core';
import { nodeListing } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class NodeUncordon extends RestCommand {
  static override description = 'remove a cordon label from a node; with the drain label it cancels a drain';
  static override examples = [
    '<%= config.bin %> node uncordon node-2',
    '<%= config.bin %> node uncordon node-2 --label maintenance',
  ];
  static override args = { node: Args.string({ description: 'node id', required: true }) };
  static override flags = {
    label: Flags.string({ description: 'cordon or drain label to remove', default: 'storctl' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeUncordon);
    this.print(nodeListing([await this.client.uncordonNode(args.node, flags.label)]));
  }
}
