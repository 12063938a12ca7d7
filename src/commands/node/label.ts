import { Args, Flags } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { UsageError } from '../../lib/errors.js';
import { nodeListing, restClient, restFlags } from '../../lib/rest/cli.js';

export default class NodeLabel extends StorctlCommand {
  static override description = 'set (KEY=VALUE) or remove (KEY-) a node label used by volume topology';
  static override examples = [
    '<%= config.bin %> node label node-1 zone=a',
    '<%= config.bin %> node label node-1 zone=b --overwrite',
    '<%= config.bin %> node label node-1 zone-',
  ];
  static override args = {
    node: Args.string({ description: 'node id', required: true }),
    label: Args.string({ description: 'KEY=VALUE to set, KEY- to remove', required: true }),
  };
  static override flags = {
    ...restFlags,
    overwrite: Flags.boolean({ description: 'replace an existing value', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeLabel);
    const client = restClient(flags.rest);
    try {
      const eq = args.label.indexOf('=');
      let node: Awaited<ReturnType<typeof client.getNode>>;
      if (eq > 0)
        node = await client.labelNode(
          args.node,
          args.label.slice(0, eq),
          args.label.slice(eq + 1),
          flags.overwrite,
        );
      else if (args.label.endsWith('-') && args.label.length > 1)
        node = await client.unlabelNode(args.node, args.label.slice(0, -1));
      else throw new UsageError(`label '${args.label}' is neither KEY=VALUE nor KEY-`);
      this.print(nodeListing([node]));
    } finally {
      await client.close();
    }
  }
}
