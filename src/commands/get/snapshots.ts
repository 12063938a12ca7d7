import { Flags } from '@oclif/core';
import { SNAPSHOT_TYPES, snapshotListing } from '../../lib/catalog/views/snapshots.js';
import { GetCommand } from '../../lib/get-command.js';
import { uuidArg } from '../../lib/rest/cli.js';

export default class GetSnapshots extends GetCommand {
  static override description = 'list volume snapshots with their sizes, source volume and restores';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --volume 4e01a5bc-2fd0-4fb7-9d1a-5d2d8c9a0b11',
  ];
  static override flags = { volume: Flags.string({ description: 'only snapshots of this volume' }) };

  async run(): Promise<void> {
    const { flags } = await this.parse(GetSnapshots);
    const volume = flags.volume === undefined ? undefined : uuidArg('--volume', flags.volume);
    await this.show(SNAPSHOT_TYPES, (state) => snapshotListing(state, volume), {
      live: ['snapshots'],
      liveInTables: false,
    });
  }
}
