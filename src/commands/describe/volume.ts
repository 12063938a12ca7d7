import { Args } from '@oclif/core';
import { aboutVolume, missingRecord } from '../../lib/catalog/cluster.js';
import { VOLUME_PAGE_TYPES, volumePage } from '../../lib/describe/volume.js';
import { DescribeCommand } from '../../lib/describe-command.js';
import { ServiceUnavailableError, TimeoutError } from '../../lib/errors.js';
import { uuidArg } from '../../lib/rest/cli.js';
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
    const id = uuidArg('volume id', args.id);
    // No listing from core: the page needs this one volume's fresh state only (asked below).
    const { state, events, restUrl } = await this.gather(VOLUME_PAGE_TYPES, [], {
      mentioning: aboutVolume(id),
    });
    const v = state.specs.VolumeSpec?.get(id);
    if (!v) throw missingRecord(state, 'VolumeSpec', 'volume', id);
    // The volume's fresh state (children and rebuild progress) when core answers.
    let volume: Volume | null = null;
    if (restUrl) {
      const client = new RestClient(restUrl, { timeoutMs: 5_000 });
      volume = await client
        .getVolume(id)
        .catch((err) =>
          err instanceof ServiceUnavailableError || err instanceof TimeoutError ? null : Promise.reject(err),
        )
        .finally(() => client.close());
    }
    this.printPage(volumePage(state, v, events, volume));
  }
}
