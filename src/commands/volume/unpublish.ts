import { Args, Flags } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { restClient, restFlags, uuidArg, volumeListing } from '../../lib/rest/cli.js';

export default class VolumeUnpublish extends StorctlCommand {
  static override description =
    'unpublish a volume: destroy its nexus and NBD target (the replicas and data stay)';
  static override examples = [
    '<%= config.bin %> volume unpublish 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> volume unpublish 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --force   # target node is gone',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    ...restFlags,
    force: Flags.boolean({ description: 'unpublish even when the target node is offline', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeUnpublish);
    const client = restClient(flags.rest);
    try {
      const v = await client.unpublishVolume(uuidArg('volume id', args.id), flags.force);
      this.print(volumeListing([v]));
    } finally {
      await client.close();
    }
  }
}
