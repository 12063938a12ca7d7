import { Args, Flags } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { nodeListing, restClient, restFlags } from '../../lib/rest/cli.js';

export default class NodeCordon extends StorctlCommand {
  static override description =
    'cordon a node: no new replicas or targets are placed on it (existing ones stay)';
  static override examples = [
    '<%= config.bin %> node cordon node-2',
    '<%= config.bin %> node cordon node-2 --label maintenance',
  ];
  static override args = { node: Args.string({ description: 'node id', required: true }) };
  static override flags = {
    ...restFlags,
    label: Flags.string({
      description: 'cordon label (several labels can cordon one node)',
      default: 'storctl',
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeCordon);
    const client = restClient(flags.rest);
    try {
      this.print(nodeListing([await client.cordonNode(args.node, flags.label)]));
    } finally {
      await client.close();
    }
  }
}
