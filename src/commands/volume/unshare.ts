import { Args } from '@oclif/core';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeUnshare extends RestCommand {
  static override description =
    'stop exporting the target of a published volume; its nexus stays (share it again with `volume share`)';
  static override examples = ['<%= config.bin %> volume unshare 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b'];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(VolumeUnshare);
    const id = uuidArg('volume id', args.id);
    await this.client.call<void>('DELETE', `/volumes/${id}/share`);
    this.logToStderr(`volume ${id} unshared; its nexus is kept`);
  }
}
