import { Args, Flags } from '@oclif/core';
import { UsageError } from '../../lib/errors.js';
import { nodeListing } from '../../lib/rest/cli.js';
import { RestError } from '../../lib/rest/errors.js';
import type { Node } from '../../lib/rest/types.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class NodeLabel extends RestCommand {
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
    overwrite: Flags.boolean({ description: 'replace an existing value', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeLabel);
    const eq = args.label.indexOf('=');
    try {
      let node: Node;
      if (eq > 0)
        node = await this.client.labelNode(
          args.node,
          args.label.slice(0, eq),
          args.label.slice(eq + 1),
          flags.overwrite,
        );
      else if (args.label.endsWith('-') && args.label.length > 1)
        node = await this.client.unlabelNode(args.node, args.label.slice(0, -1));
      else throw new UsageError(`label '${args.label}' is neither KEY=VALUE nor KEY-`);
      this.print(nodeListing([node]));
    } catch (err) {
      // 412 FailedPrecondition (Mayastor's label semantics): say exactly what to do next.
      if (err instanceof RestError && err.kind === 'FailedPrecondition') {
        const key = eq > 0 ? args.label.slice(0, eq) : args.label.slice(0, -1);
        throw new RestError(
          err.kind,
          err.status,
          err.message.replace(/^FailedPrecondition: /, ''),
          err.details,
          [
            eq > 0
              ? `replace the value with \`storctl node label ${args.node} ${args.label} --overwrite\``
              : `see the node's labels with \`storctl get node ${args.node} -o json\`; '${key}' is not one of them`,
          ],
        );
      }
      throw err;
    }
  }
}
