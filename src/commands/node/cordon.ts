import { Args, Flags } from '@oclif/core';
import { cordonLabel } from '../../lib/cli-args.js';
import { nodeListing } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class NodeCordon extends RestCommand {
  static override description =
    'cordon a node: no new replicas or targets are placed on it (existing ones stay)';
  static override examples = [
    '<%= config.bin %> node cordon node-2',
    '<%= config.bin %> node cordon node-2 --label maintenance',
    "<%= config.bin %> node cordon node-2 maintenance   # kubectl-mayastor's form",
  ];
  static override args = {
    node: Args.string({ description: 'node id', required: true }),
    label: Args.string({ description: 'cordon label, as kubectl-mayastor takes it (same as --label)' }),
  };
  static override flags = {
    label: Flags.string({
      description: 'cordon label (several labels can cordon one node) [default: storctl]',
    }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeCordon);
    const label = cordonLabel(args.label, flags.label, 'storctl');
    this.print(nodeListing([await this.client.cordonNode(args.node, label)]));
  }
}
