import { Args, Flags } from '@oclif/core';
import { uuidArg, volumeListing } from '../../lib/rest/cli.js';
import { RestError } from '../../lib/rest/errors.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumePublish extends RestCommand {
  static override description =
    'publish a volume: build its nexus on a node and share it over NBD; prints the target URI';
  static override examples = [
    '<%= config.bin %> volume publish 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> volume publish 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --node node-2 -o json',
    '<%= config.bin %> volume publish 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --republish   # move the target to another node',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    node: Flags.string({ description: 'node for the target (default: a node holding a replica)' }),
    republish: Flags.boolean({
      description: 'move an already published target to another node',
      default: false,
    }),
    'frontend-node': Flags.string({
      description: 'node that will connect to the target (recorded in the host ACL)',
    }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumePublish);
    const id = uuidArg('volume id', args.id);
    const v = await this.client
      .publishVolume(id, {
        protocol: 'nbd',
        publish_context: {},
        node: flags.node,
        republish: flags.republish || undefined,
        frontend_node: flags['frontend-node'],
      })
      .catch(async (err) => {
        // Already published where asked (anywhere, when no node is named): the same answer as a
        // first publish, so a script can call it again to learn the current URI.
        if (!(err instanceof RestError && err.kind === 'AlreadyPublished') || flags.republish) throw err;
        const current = await this.client.getVolume(id);
        const target = current.state.target;
        if (!target?.deviceUri || (flags.node && current.spec.target?.node !== flags.node)) throw err;
        return current;
      });
    if (this.globals.output === 'table') this.log(v.state.target?.deviceUri ?? '');
    else this.print(volumeListing([v]));
  }
}
