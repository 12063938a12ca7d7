import { REPLICA_TYPES, replicaListing } from '../../lib/catalog/views/replicas.js';
import { GetCommand } from '../../lib/get-command.js';

export default class GetReplicas extends GetCommand {
  static override description = 'list replicas with their pool, node, owner and recorded health';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> -o wide',
  ];

  async run(): Promise<void> {
    await this.parse(GetReplicas);
    await this.showSpecs('ReplicaSpec', undefined, REPLICA_TYPES, (state) => replicaListing(state));
  }
}
