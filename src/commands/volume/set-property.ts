import { Args, Flags } from '@oclif/core';
import { uuidArg, volumeListing } from '../../lib/rest/cli.js';
import type { Volume } from '../../lib/rest/types.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeSetProperty extends RestCommand {
  static override description =
    'set a volume property; --max-snapshots caps its snapshots (creating one more is refused, OutOfRange)';
  static override examples = [
    '<%= config.bin %> volume set-property 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --max-snapshots 10',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    'max-snapshots': Flags.integer({
      description: 'most snapshots the volume may have (at least the number it has now)',
      required: true,
      min: 0,
      max: 0xffffffff,
    }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeSetProperty);
    const id = uuidArg('volume id', args.id);
    const v = await this.client.call<Volume>('PUT', `/volumes/${id}/property`, {
      max_snapshots: flags['max-snapshots'],
    });
    this.print(volumeListing([v]));
  }
}
