import { Args } from '@oclif/core';
import { missingRecord, readCluster } from '../../lib/catalog/cluster.js';
import { NODE_PAGE_TYPES, nodePage, nodeTargets } from '../../lib/describe/node.js';
import { DescribeCommand } from '../../lib/describe-command.js';

export default class DescribeNode extends DescribeCommand {
  static override description =
    'everything about one io-engine node: liveness, cordon and drain labels, pools, the targets it serves, recent events';
  static override examples = [
    '<%= config.bin %> <%= command.id %> node-1',
    '<%= config.bin %> <%= command.id %> node-1 -o json',
  ];
  static override args = { id: Args.string({ description: 'node id', required: true }) };

  async run(): Promise<void> {
    const { args } = await this.parse(DescribeNode);
    const { state, events, live } = await this.gather(NODE_PAGE_TYPES, ['pools', 'volumes'], {
      // Its pools first: its replicas are the ones that name one of them.
      mentioning: async (store) => {
        const pools = await readCluster(store, this.globals.keySpace, ['PoolSpec']);
        const poolIds = [...(pools.specs.PoolSpec?.values() ?? [])]
          .filter((p) => p.node === args.id)
          .map((p) => p.id);
        return { ids: [args.id, ...poolIds], types: ['ReplicaSpec', 'VolumeSpec'] };
      },
      volumesOf: (s) => nodeTargets(s, args.id).map((v) => v.uuid),
    });
    const n = state.specs.NodeSpec?.get(args.id);
    if (!n) throw missingRecord(state, 'NodeSpec', 'node', args.id);
    this.printPage(nodePage(state, n, events, live));
  }
}
