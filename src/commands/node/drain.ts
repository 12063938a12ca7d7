import { Args, Flags } from '@oclif/core';
import { cordonLabel, durationFlag } from '../../lib/cli-args.js';
import { nodeListing, waitDrained } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class NodeDrain extends RestCommand {
  static override description =
    'drain a node: cordon it and move every volume target off it (progress on stderr with --wait)';
  static override examples = [
    '<%= config.bin %> node drain node-2 --wait',
    '<%= config.bin %> node drain node-2 --label upgrade',
    "<%= config.bin %> node drain node-2 upgrade --wait   # kubectl-mayastor's form",
  ];
  static override args = {
    node: Args.string({ description: 'node id', required: true }),
    label: Args.string({ description: 'drain label, as kubectl-mayastor takes it (same as --label)' }),
  };
  static override flags = {
    label: Flags.string({
      description: 'drain label (uncordon with it to cancel) [default: storctl-drain]',
    }),
    wait: Flags.boolean({ description: 'wait until the node is drained', default: false }),
    timeout: durationFlag({
      description: 'how long to wait with --wait, e.g. 90s or 10m (a bare number is seconds)',
      default: 300_000,
    }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeDrain);
    let node = await this.client.drainNode(args.node, cordonLabel(args.label, flags.label, 'storctl-drain'));
    if (flags.wait) {
      node = await waitDrained(this.client, args.node, node, flags.timeout, (left) =>
        this.logToStderr(`draining ${args.node}: ${left} volume target(s) left to move`),
      );
      this.logToStderr(`node ${args.node} drained`);
    }
    this.print(nodeListing([node]));
  }
}
