import { Args, Flags } from '@oclif/core';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeShare extends RestCommand {
  static override description =
    'share the target of a published volume again (after `volume unshare`); prints the target URI';
  static override examples = [
    '<%= config.bin %> volume share 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> volume share 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --frontend-host app-node-1',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    protocol: Flags.string({ description: 'share protocol', options: ['nbd'], default: 'nbd' }),
    'frontend-host': Flags.string({ description: 'host allowed to connect (recorded in the target)' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeShare);
    const id = uuidArg('volume id', args.id);
    const uri = await this.client.call<string>('PUT', `/volumes/${id}/share/${flags.protocol}`, undefined, {
      frontend_host: flags['frontend-host'],
    });
    this.log(uri);
  }
}
