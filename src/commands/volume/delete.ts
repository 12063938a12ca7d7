import { Args, Flags } from '@oclif/core';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeDelete extends RestCommand {
  static override description =
    'delete a volume, its target and its replicas; a published volume (a host may be using it) only with --force. Its snapshots stay: restore one with `volume create --from-snapshot`, remove them with `snapshot delete`';
  static override examples = [
    '<%= config.bin %> volume delete 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
    '<%= config.bin %> volume delete 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --force',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = {
    force: Flags.boolean({
      description: 'delete it even while published: I/O through its target fails from then on',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeDelete);
    const id = uuidArg('volume id', args.id);
    await this.client.deleteVolume(id, { ifUnpublished: !flags.force });
    this.logToStderr(`volume ${id} deleted`);
  }
}
