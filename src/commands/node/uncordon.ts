import { Args, Flags } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { nodeListing, restClient, restFlags } from '../../lib/rest/cli.js';

export default class NodeUncordon extends StorctlCommand {
  static override description = 'remove a cordon label from a node; with the drain label it cancels a drain';
  static override examples = [
    '<%= config.bin %> node uncordon node-2',
    '<%= config.bin %> node uncordon node-2 --label maintenance',
  ];
  static override args = { node: Args.string({ description: 'node id', required: true }) };
  static override flags = {
    ...restFlags,
    label: Flags.string({ description: 'cordon or drain label to remove', default: 'storctl' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeUncordon);
    const client = restClient(flags.rest);
    try {
      this.print(nodeListing([await client.uncordonNode(args.node, flags.label)]));
    } finally {
      await client.close();
    }
  }
}
