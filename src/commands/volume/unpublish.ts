import { Args, Flags } from '@oclif/core';
import { uuidArg, volumeListing } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeUnpublish extends RestCommand {
  static override description =
    'unpublish a volume: destroy its nexus and NBD target (the replicas and data stay)';
  static override examples = [
    '<%= config.bin %> volume unpublish 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> volume unpublish 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --force   # target node is gone',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    force: Flags.boolean({ description: 'unpublish even when the target node is offline', default: false }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeUnpublish);
    const v = await this.client.unpublishVolume(uuidArg('volume id', args.id), flags.force);
    this.print(volumeListing([v]));
  }
}
