import { Args } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { restClient, restFlags } from '../../lib/rest/cli.js';

export default class PoolDelete extends StorctlCommand {
  static override description = 'delete a pool (refused while it holds replicas)';
  static override examples = ['<%= config.bin %> pool delete pool-1'];
  static override args = { id: Args.string({ description: 'pool id', required: true }) };
  static override flags = { ...restFlags };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(PoolDelete);
    const client = restClient(flags.rest);
    try {
      await client.deletePool(args.id);
      this.logToStderr(`pool ${args.id} deleted`);
    } finally {
      await client.close();
    }
  }
}
