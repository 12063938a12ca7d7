import { Args, Flags } from '@oclif/core';
import { POOL_TYPES, poolListing } from '../../lib/catalog/views/pools.js';
import { parseSelector } from '../../lib/cli-args.js';
import { GetCommand, selectorFlag } from '../../lib/get-command.js';
import { type PoolSpec, poolMatches } from '../../lib/specs/index.js';

export default class GetPools extends GetCommand {
  static override description = 'list pools with their node, status and committed size';
  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --node node-1',
    '<%= config.bin %> <%= command.id %> -o custom-columns=ID:.id,NODE:.node,ZONE:.labels.zone',
    '<%= config.bin %> <%= command.id %> --selector openebs.io/created-by=operator-diskpool -o wide',
  ];
  static override flags = {
    selector: selectorFlag,
    node: Flags.string({ description: 'only pools on this node' }),
  };

  static override args = { id: Args.string({ description: 'one pool id (as `get pool ID`)' }) };
  static override aliases = ['get:dsp'];

  async run(): Promise<void> {
    const { args, flags } = await this.parse(GetPools);
    if (args.id) {
      const id = args.id;
      return this.showOne('pool', id, POOL_TYPES, (s) => poolListing(s, (p) => p.id === id), {
        live: ['pools'],
      });
    }
    const selector = parseSelector(flags.selector);
    const filter = (p: PoolSpec) =>
      (!flags.node || p.node === flags.node) && (!selector || poolMatches(p, selector));
    await this.show(POOL_TYPES, (state) => poolListing(state, filter), { live: ['pools'] });
  }
}
