import { Args } from '@oclif/core';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class SnapshotDelete extends RestCommand {
  static override description =
    'delete a volume snapshot and its replica snapshots (volumes restored from it keep their data: they are copies)';
  static override examples = ['<%= config.bin %> snapshot delete 9b2c7d1e-0f3a-4b5c-8d6e-7f8091a2b3c4'];
  static override args = { id: Args.string({ description: 'snapshot uuid', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(SnapshotDelete);
    await this.client.deleteSnapshot(uuidArg('snapshot id', args.id));
    this.logToStderr(`snapshot ${args.id} deleted`);
  }
}
