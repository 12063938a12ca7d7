import { Args, Flags } from '@oclif/core';
import { cordonLabel } from '../../lib/cli-args.js';
import { ConflictError, UsageError } from '../../lib/errors.js';
import { nodeListing } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class NodeUncordon extends RestCommand {
  static override description =
    "remove a cordon label from a node; with the drain label it cancels a drain. Without --label, the node's only cordon or drain label is removed";
  static override examples = [
    '<%= config.bin %> node uncordon node-2',
    '<%= config.bin %> node uncordon node-2 --label maintenance',
    '<%= config.bin %> node uncordon node-2 --label storctl-drain   # cancel a drain started with `node drain`',
    "<%= config.bin %> node uncordon node-2 maintenance   # kubectl-mayastor's form",
  ];
  static override args = {
    node: Args.string({ description: 'node id', required: true }),
    label: Args.string({ description: 'label to remove, as kubectl-mayastor takes it (same as --label)' }),
  };
  static override flags = {
    label: Flags.string({ description: "cordon or drain label to remove (default: the node's only one)" }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeUncordon);
    const label = cordonLabel(args.label, flags.label) ?? (await this.onlyLabel(args.node));
    this.print(nodeListing([await this.client.uncordonNode(args.node, label)]));
  }

  /** The node's one cordon or drain label; a usage error naming them when there are several. */
  private async onlyLabel(node: string): Promise<string> {
    const states = Object.values((await this.client.getNode(node)).spec?.cordondrainstate ?? {});
    const labels = [
      ...new Set(states.flatMap((s) => [...s.cordonlabels, ...('drainlabels' in s ? s.drainlabels : [])])),
    ];
    if (labels.length === 1) return labels[0];
    if (labels.length === 0)
      throw new ConflictError('NODE_NOT_CORDONED', `node '${node}' is not cordoned or draining`);
    throw new UsageError(`node '${node}' has several cordon/drain labels (${labels.join(', ')}): name one`, {
      suggestions: labels.map((l) => `storctl node uncordon ${node} --label ${l}`),
    });
  }
}
