import { Args, Flags } from '@oclif/core';
import { sizeArg, uuidArg, volumeListing } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeResize extends RestCommand {
  static override description =
    'grow a volume (every replica, then the target), published or not; shrinking is refused. ' +
    'NBD clients connected to a published volume keep the old size until they reconnect.';
  static override examples = [
    '<%= config.bin %> volume resize 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --size 20GiB',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    size: Flags.string({ description: 'new size, e.g. 20GiB', required: true }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeResize);
    const volume = await this.client.resizeVolume(uuidArg('volume id', args.id), sizeArg('size', flags.size));
    this.print(volumeListing([volume]));
    const target = volume.state.target?.deviceUri;
    // NBD has no resize notification: say so on stderr, out of the way of -o json.
    if (target)
      process.stderr.write(
        `volume is published: new connections to ${target} see ${volume.spec.size} bytes; ` +
          'clients already connected keep the old size until they reconnect\n',
      );
  }
}
