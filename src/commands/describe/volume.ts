import { Args } from '@oclif/core';
import { VOLUME_PAGE_TYPES, volumePage } from '../../lib/describe/volume.js';
import { DescribeCommand } from '../../lib/describe-command.js';
import { NotFoundError } from '../../lib/errors.js';
import { RestClient } from '../../lib/rest/client.js';
import type { Volume } from '../../lib/rest/types.js';

export default class DescribeVolume extends DescribeCommand {
  static override description =
    'everything about one volume: spec, target and its URI, replicas with health and rebuild %, NexusInfo, snapshots, switchover, recent events';
  static override examples = [
    '<%= config.bin %> <%= command.id %> 4e01a5bc-2fd0-4fb7-9d1a-5d2d8c9a0b11',
    '<%= config.bin %> <%= command.id %> 4e01a5bc-2fd0-4fb7-9d1a-5d2d8c9a0b11 -o yaml',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(DescribeVolume);
    const { state, events, live, restUrl } = await this.gather(VOLUME_PAGE_TYPES);
    const v = state.specs.VolumeSpec?.get(args.id);
    if (!v) throw new NotFoundError('volume', args.id, { suggestions: ['storctl get volumes'] });
    // One volume's fresh state (children and rebuild progress) when core answered the listing.
    let volume: Volume | null = null;
    if (live && restUrl) {
      const client = new RestClient(restUrl, { timeoutMs: 5_000 });
      volume = await client.getVolume(args.id).finally(() => client.close());
    }
    this.printPage(volumePage(state, v, events, volume));
  }
}
