import { Args } from '@oclif/core';
import { humanizeBytes } from '../../lib/output/humanize.js';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

interface RebuildRecord {
  childUri: string;
  srcUri: string;
  rebuildJobState: string;
  blocksTotal: number;
  blocksRecovered: number;
  blockSize: number;
  isPartial: boolean;
  startTime: string;
  endTime: string;
}

export default class VolumeRebuildHistory extends RestCommand {
  static override description =
    "finished rebuilds of a published volume's target: which child was rebuilt from which, how much, when";
  static override examples = [
    '<%= config.bin %> volume rebuild-history 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> volume rebuild-history 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b -o json',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args } = await this.parse(VolumeRebuildHistory);
    const id = uuidArg('volume id', args.id);
    const h = await this.client.call<{ targetUuid: string; records: RebuildRecord[] }>(
      'GET',
      `/volumes/${id}/rebuild-history`,
    );
    this.print({
      rows: h.records,
      columns: [
        { header: 'CHILD', get: (r) => r.childUri },
        { header: 'SOURCE', get: (r) => r.srcUri },
        { header: 'STATE', get: (r) => r.rebuildJobState },
        { header: 'REBUILT', get: (r) => humanizeBytes(r.blocksRecovered * r.blockSize) },
        { header: 'PARTIAL', get: (r) => r.isPartial },
        { header: 'START', get: (r) => r.startTime, wide: true },
        { header: 'END', get: (r) => r.endTime },
      ],
      object: (r) => ({ targetUuid: h.targetUuid, ...r }),
    });
  }
}
