import { Args } from '@oclif/core';
import { missingRecord } from '../../lib/catalog/cluster.js';
import { VOLUME_TYPES, volumeListing } from '../../lib/catalog/views/volumes.js';
import { GetCommand } from '../../lib/get-command.js';
import { uuidArg } from '../../lib/rest/cli.js';

export default class GetVolume extends GetCommand {
  static override description = 'show one volume';
  static override examples = [
    '<%= config.bin %> <%= command.id %> 4e01a5bc-2fd0-4fb7-9d1a-5d2d8c9a0b11 -o yaml',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(GetVolume);
    const id = uuidArg('volume id', args.id);
    await this.show(
      VOLUME_TYPES,
      (state) => {
        const listing = volumeListing(state, (v) => v.uuid === id);
        if (!listing.rows.length) throw missingRecord(state, 'VolumeSpec', 'volume', id);
        return { ...listing, single: true };
      },
      { live: ['volumes'], volume: id },
    );
  }
}
