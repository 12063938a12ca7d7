import { Args } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { restClient, restFlags, uuidArg } from '../../lib/rest/cli.js';

export default class VolumeShutdownTargets extends StorctlCommand {
  static override description =
    "destroy a volume's stale targets: nexuses other than its current target (left by a republish while a node was unreachable)";
  static override examples = [
    '<%= config.bin %> volume shutdown-targets 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };
  static override flags = { ...restFlags };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeShutdownTargets);
    const id = uuidArg('volume id', args.id);
    const client = restClient(flags.rest);
    try {
      await client.call<void>('DELETE', `/volumes/${id}/shutdown_targets`);
      this.logToStderr(`stale targets of volume ${id} destroyed (those on offline nodes when they return)`);
    } finally {
      await client.close();
    }
  }
}
