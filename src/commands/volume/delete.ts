import { Args } from '@oclif/core';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeDelete extends RestCommand {
  static override description = 'delete a volume, its target and its replicas';
  static override examples = ['<%= config.bin %> volume delete 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b'];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(VolumeDelete);
    await this.client.deleteVolume(uuidArg('volume id', args.id));
    this.logToStderr(`volume ${args.id} deleted`);
  }
}
