import { Args } from '@oclif/core';
import { RestCommand } from '../../lib/rest-command.js';

export default class PoolDelete extends RestCommand {
  static override description = 'delete a pool (refused while it holds replicas)';
  static override examples = ['<%= config.bin %> pool delete pool-1'];
  static override args = { id: Args.string({ description: 'pool id', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(PoolDelete);
    await this.client.deletePool(args.id);
    this.logToStderr(`pool ${args.id} deleted`);
  }
}
