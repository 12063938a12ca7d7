import { randomUUID } from 'node:crypto';
import { Args } from '@oclif/core';
import { humanizeBytes } from '../../lib/output/humanize.js';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestError } from '../../lib/rest/errors.js';
import type { VolumeSnapshot } from '../../lib/rest/types.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class SnapshotCreate extends RestCommand {
  static override description =
    'snapshot a volume (one snapshot per online replica that holds its latest data)';
  static override examples = [
    '<%= config.bin %> snapshot create 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> snapshot create 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b 9b2c7d1e-0f3a-4b5c-8d6e-7f8091a2b3c4 -o json',
  ];
  static override templateOutput = true;
  static override args = {
    volume: Args.string({ description: 'volume uuid', required: true }),
    id: Args.string({ description: 'snapshot uuid (default: a new one)' }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(SnapshotCreate);
    const volume = uuidArg('volume id', args.volume);
    const id = args.id ? uuidArg('snapshot id', args.id) : randomUUID();
    let s: VolumeSnapshot;
    try {
      s = await this.client.createSnapshot(volume, id);
    } catch (err) {
      if (err instanceof RestError) await this.namePending(err, volume, id);
      throw err;
    }
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

  /**
   * A failed create leaves its record Creating (core keeps it so the same id can be retried, as
   * upstream does): say which id that is, which a user who let storctl pick one never saw.
   */
  private async namePending(err: RestError, volume: string, id: string): Promise<void> {
    const left = await this.client.getSnapshot(id).catch(() => undefined);
    if (left?.definition.metadata.status !== 'Creating') return;
    err.suggestions.unshift(
      `snapshot ${id} stays recorded as Creating: retry it with \`storctl snapshot create ${volume} ${id}\`, or remove it with \`storctl snapshot delete ${id}\``,
    );
  }
}
