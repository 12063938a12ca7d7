import { randomUUID } from 'node:crypto';
import { Args } from '@oclif/core';
import { humanizeBytes } from '../../lib/output/humanize.js';
import { uuidArg } from '../../lib/rest/cli.js';
import type { VolumeSnapshot } from '../../lib/rest/types.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class SnapshotCreate extends RestCommand {
  static override description = 'snapshot a volume (one snapshot per online replica)';
  static override examples = [
    '<%= config.bin %> snapshot create 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> snapshot create 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b 9b2c7d1e-0f3a-4b5c-8d6e-7f8091a2b3c4 -o json',
  ];
  static override args = {
    volume: Args.string({ description: 'volume uuid', required: true }),
    id: Args.string({ description: 'snapshot uuid (default: a new one)' }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(SnapshotCreate);
    const s = await this.client.createSnapshot(
      uuidArg('volume id', args.volume),
      args.id ? uuidArg('snapshot id', args.id) : randomUUID(),
    );
    this.print<VolumeSnapshot>({
      rows: [s],
      single: true,
      columns: [
        { header: 'ID', get: (r) => r.definition.spec.uuid },
        { header: 'SOURCE-VOLUME', get: (r) => r.definition.spec.source_volume },
        { header: 'STATUS', get: (r) => r.definition.metadata.status },
        { header: 'SIZE', get: (r) => humanizeBytes(r.definition.metadata.size) },
        { header: 'CREATED', get: (r) => r.definition.metadata.timestamp },
      ],
    });
  }
}
