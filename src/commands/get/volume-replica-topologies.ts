import { REPLICA_TYPES, replicaTopologiesListing } from '../../lib/catalog/views/replicas.js';
import { GetCommand } from '../../lib/get-command.js';

export default class GetVolumeReplicaTopologies extends GetCommand {
  static override description =
    "show every volume's replicas: node, pool, status, what each holds and its health on the target (rebuild progress when core answers)";
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    {
      description: 'Before an upgrade or a drain: no child may be Degraded (rebuilding)',
      command: "<%= config.bin %> <%= command.id %> -o jsonpath='{.items[*].child_status}'",
    },
  ];

  async run(): Promise<void> {
    await this.parse(GetVolumeReplicaTopologies);
    await this.show(REPLICA_TYPES, replicaTopologiesListing, { live: ['volumes'] });
  }
}
