import { Args } from '@oclif/core';
import { replicaUuidOfUri } from '../../lib/child-uri.js';
import { humanizeBytes } from '../../lib/output/humanize.js';
import { uuidArg } from '../../lib/rest/cli.js';
import type { RebuildHistory, RebuildRecord } from '../../lib/rest/types.js';
import { RestCommand } from '../../lib/rest-command.js';

/** The replica a child URI names, else the URI itself. */
const replicaOf = (uri: string) => replicaUuidOfUri(uri) ?? uri;

/** `2024-09-03T15:57:59Z`, as kubectl-mayastor prints rebuild times. */
const secondsUtc = (time: string) => {
  const t = new Date(time);
  return Number.isNaN(t.getTime()) ? time : `${t.toISOString().slice(0, 19)}Z`;
};

const bytes = (r: RebuildRecord, blocks: number) => humanizeBytes(blocks * r.blockSize);

export default class VolumeRebuildHistory extends RestCommand {
  static override description =
    "finished rebuilds of a published volume's target: which replica was rebuilt from which, how much, when";
  static override examples = [
    '<%= config.bin %> volume rebuild-history 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> volume rebuild-history 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b -o wide',
    '<%= config.bin %> volume rebuild-history 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b -o json',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args } = await this.parse(VolumeRebuildHistory);
    const id = uuidArg('volume id', args.id);
    const h = await this.client.call<RebuildHistory>('GET', `/volumes/${id}/rebuild-history`);
    // kubectl-mayastor's columns: replicas by uuid, sizes in bytes, times to the second.
    this.print({
      rows: h.records,
      columns: [
        { header: 'DST', get: (r) => replicaOf(r.childUri) },
        { header: 'SRC', get: (r) => replicaOf(r.srcUri) },
        { header: 'STATE', get: (r) => r.rebuildJobState },
        { header: 'TOTAL', get: (r) => bytes(r, r.blocksTotal) },
        { header: 'RECOVERED', get: (r) => bytes(r, r.blocksRecovered) },
        { header: 'TRANSFERRED', get: (r) => bytes(r, r.blocksTransferred) },
        { header: 'IS-PARTIAL', get: (r) => r.isPartial },
        { header: 'START-TIME', get: (r) => secondsUtc(r.startTime) },
        { header: 'END-TIME', get: (r) => secondsUtc(r.endTime) },
        { header: 'DST-URI', get: (r) => r.childUri, wide: true },
        { header: 'SRC-URI', get: (r) => r.srcUri, wide: true },
      ],
      object: (r) => ({ targetUuid: h.targetUuid, ...r }),
    });
  }
}
