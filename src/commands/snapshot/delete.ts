import { Args } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { restClient, restFlags, uuidArg } from '../../lib/rest/cli.js';

export default class SnapshotDelete extends StorctlCommand {
  static override description = 'delete a volume snapshot and its replica snapshots';
  static override examples = ['<%= config.bin %> snapshot delete 9b2c7d1e-0f3a-4b5c-8d6e-7f8091a2b3c4'];
  static override args = { id: Args.string({ description: 'snapshot uuid', required: true }) };
  static override flags = { ...restFlags };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(SnapshotDelete);
    const client = restClient(flags.rest);
    try {
      await client.deleteSnapshot(uuidArg('snapshot id', args.id));
      this.logToStderr(`snapshot ${args.id} deleted`);
    } finally {
      await client.close();
    }
  }
}
