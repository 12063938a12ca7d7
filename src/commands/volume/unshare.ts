import { Args } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { restClient, restFlags, uuidArg } from '../../lib/rest/cli.js';

export default class VolumeUnshare extends StorctlCommand {
  static override description =
    'stop exporting the target of a published volume; its nexus stays (share it again with `volume share`)';
  static override examples = ['<%= config.bin %> volume unshare 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b'];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = { ...restFlags };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeUnshare);
    const id = uuidArg('volume id', args.id);
    const client = restClient(flags.rest);
    try {
      await client.call<void>('DELETE', `/volumes/${id}/share`);
      this.logToStderr(`volume ${id} unshared; its nexus is kept`);
    } finally {
      await client.close();
    }
  }
}
