import { Args, Flags } from '@oclif/core';
import { nodeListing } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class NodeCordon extends RestCommand {
  static override description =
    'cordon a node: no new replicas or targets are placed on it (existing ones stay)';
  static override examples = [
    '<%= config.bin %> node cordon node-2',
    '<%= config.bin %> node cordon node-2 --label maintenance',
  ];
  static override args = { node: Args.string({ description: 'node id', required: true }) };
  static override flags = {
    label: Flags.string({
      description: 'cordon label (several labels can cordon one node)',
      default: 'storctl',
    }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeCordon);
    this.print(nodeListing([await this.client.cordonNode(args.node, flags.label)]));
  }
}
