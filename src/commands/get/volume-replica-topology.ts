import { Args } from '@oclif/core';
import { missingRecord } from '../../lib/catalog/cluster.js';
import { REPLICA_TYPES, replicaTopologyListing } from '../../lib/catalog/views/replicas.js';
import { GetCommand } from '../../lib/get-command.js';
import { uuidArg } from '../../lib/rest/cli.js';

export default class GetVolumeReplicaTopology extends GetCommand {
  static override description =
    "show a volume's replicas: node, pool, status and the health its target recorded";
  static override examples = ['<%= config.bin %> <%= command.id %> 4e01a5bc-2fd0-4fb7-9d1a-5d2d8c9a0b11'];
  static override args = { id: Args.string({ description: 'volume uuid', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(GetVolumeReplicaTopology);
    const id = uuidArg('volume id', args.id);
    await this.show(
      REPLICA_TYPES,
      (state) => {
        if (!state.specs.VolumeSpec?.has(id)) throw missingRecord(state, 'VolumeSpec', 'volume', id);
        return replicaTopologyListing(state, id);
      },
      { live: ['volumes'], volume: id },
    );
  }
}
