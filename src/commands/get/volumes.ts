import { Args } from '@oclif/core';
import { VOLUME_TYPES, volumeListing } from '../../lib/catalog/views/volumes.js';
import { GetCommand } from '../../lib/get-command.js';
import { uuidArg } from '../../lib/rest/cli.js';

export default class GetVolumes extends GetCommand {
  static override description = 'list volumes with their replicas, target, status and size';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> -o wide',
    "<%= config.bin %> <%= command.id %> -o jsonpath='{.items[*].spec.uuid}'",
    '<%= config.bin %> <%= command.id %> -o json --store etcd://10.0.0.5:2379 --cluster-id 1013e263-e0ba-48b2-ae78-52d51b5da9c8 --namespace mayastor',
  ];

  static override args = { id: Args.string({ description: 'one volume uuid (as `get volume ID`)' }) };
  static override aliases = ['get:vol', 'get:vols'];

  async run(): Promise<void> {
    const { args } = await this.parse(GetVolumes);
    if (args.id) {
      const id = uuidArg('volume id', args.id);
      return this.showOne('volume', id, VOLUME_TYPES, (s) => volumeListing(s, (v) => v.uuid === id), {
        live: ['volumes'],
        volume: id,
      });
    }
    await this.showVolumes(VOLUME_TYPES, (state) => volumeListing(state));
  }
}
