import { Args } from '@oclif/core';
import { uuidArg } from '../../lib/rest/cli.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeShutdownTargets extends RestCommand {
  static override description =
    "destroy a volume's stale targets: nexuses other than its current target (left by a republish while a node was unreachable)";
  static override examples = [
    '<%= config.bin %> volume shutdown-targets 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b',
  ];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(VolumeShutdownTargets);
    const id = uuidArg('volume id', args.id);
    await this.client.call<void>('DELETE', `/volumes/${id}/shutdown_targets`);
    this.logToStderr(`stale targets of volume ${id} destroyed (those on offline nodes when they return)`);
  }
}
