import { Args, Flags } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { restClient, restFlags, sizeArg, uuidArg, volumeListing } from '../../lib/rest/cli.js';

export default class VolumeResize extends StorctlCommand {
  static override description = 'grow a volume (every replica, then the target); shrinking is refused';
  static override examples = [
    '<%= config.bin %> volume resize 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --size 20GiB',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    ...restFlags,
    size: Flags.string({ description: 'new size, e.g. 20GiB', required: true }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeResize);
    const client = restClient(flags.rest);
    try {
      this.print(
        volumeListing([
          await client.resizeVolume(uuidArg('volume id', args.id), sizeArg('size', flags.size)),
        ]),
      );
    } finally {
      await client.close();
    }
  }
}
