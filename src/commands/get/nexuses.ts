import { NEXUS_TYPES, nexusListing } from '../../lib/catalog/views/nexuses.js';
import { GetCommand } from '../../lib/get-command.js';

export default class GetNexuses extends GetCommand {
  static override description = 'list nexuses (volume targets) with their node, children and status';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> -o wide',
  ];

  async run(): Promise<void> {
    await this.parse(GetNexuses);
    await this.showSpecs('NexusSpec', undefined, NEXUS_TYPES, (state) => nexusListing(state), {
      live: ['nexuses'],
    });
  }
}
