import { SWITCHOVER_TYPES, switchOverListing } from '../../lib/catalog/views/switchovers.js';
import { GetCommand } from '../../lib/get-command.js';

export default class GetSwitchovers extends GetCommand {
  static override description = 'list HA switchovers in progress or finished, with their stage';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> -o wide',
  ];

  async run(): Promise<void> {
    await this.parse(GetSwitchovers);
    await this.showSpecs('SwitchOver', undefined, SWITCHOVER_TYPES, (state) => switchOverListing(state));
  }
}
