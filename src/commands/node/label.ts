import { Args, Flags } from '@oclif/core';
import { parseLabelEdit } from '../../lib/cli-args.js';
import { nodeListing } from '../../lib/rest/cli.js';
import { RestError } from '../../lib/rest/errors.js';
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

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeLabel);
    const label = parseLabelEdit(args.label);
    try {
      const node =
        label.op === 'set'
          ? await this.client.labelNode(args.node, label.key, label.value, flags.overwrite)
          : await this.client.unlabelNode(args.node, label.key);
      this.print(nodeListing([node]));
    } catch (err) {
      // 412 FailedPrecondition (Mayastor's label semantics): say exactly what to do next.
      if (err instanceof RestError && err.kind === 'FailedPrecondition') {
        throw new RestError(
          err.kind,
          err.status,
          err.message.replace(/^FailedPrecondition: /, ''),
          err.details,
          [
            label.op === 'set'
              ? `replace the value with \`storctl node label ${args.node} ${args.label} --overwrite\``
              : `see the node's labels with \`storctl get node ${args.node} -o json\`; '${label.key}' is not one of them`,
          ],
        );
      }
      throw err;
    }
  }
}
