import { Args } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { restClient, restFlags, uuidArg } from '../../lib/rest/cli.js';

export default class VolumeDelete extends StorctlCommand {
  static override description = 'delete a volume, its target and its replicas';
  static override examples = ['<%= config.bin %> volume delete 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b'];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = { ...restFlags };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeDelete);
    const client = restClient(flags.rest);
    try {
      await client.deleteVolume(uuidArg('volume id', args.id));
      this.logToStderr(`volume ${args.id} deleted`);
    } finally {
      await client.close();
    }
  }
}
