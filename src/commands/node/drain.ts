import { setTimeout as sleep } from 'node:timers/promises';
import { Args, Flags } from '@oclif/core';
import { StorctlCommand } from '../../lib/command.js';
import { TimeoutError } from '../../lib/errors.js';
import { nodeListing, restClient, restFlags } from '../../lib/rest/cli.js';

export default class NodeDrain extends StorctlCommand {
  static override description =
    'drain a node: cordon it and move every volume target off it (progress on stderr with --wait)';
  static override examples = [
    '<%= config.bin %> node drain node-2 --wait',
    '<%= config.bin %> node drain node-2 --label upgrade',
  ];
  static override args = { node: Args.string({ description: 'node id', required: true }) };
  static override flags = {
    ...restFlags,
    label: Flags.string({
      description: 'drain label (uncordon with it to cancel)',
      default: 'storctl-drain',
    }),
    wait: Flags.boolean({ description: 'wait until the node is drained', default: false }),
    timeout: Flags.integer({ description: 'seconds to wait with --wait', default: 300 }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(NodeDrain);
    const client = restClient(flags.rest);
    try {
      let node = await client.drainNode(args.node, flags.label);
      if (flags.wait) {
        const deadline = Date.now() + flags.timeout * 1000;
        let last = -1;
        while (!node.spec?.cordondrainstate?.drainedstate) {
          const left = (await client.listVolumes()).filter((v) => v.spec.target?.node === args.node).length;
          if (left !== last) this.logToStderr(`draining ${args.node}: ${left} volume target(s) left to move`);
          last = left;
          if (Date.now() > deadline)
            throw new TimeoutError(
              `node ${args.node} not drained after ${flags.timeout}s (${left} target(s) left)`,
              { suggestions: ['see why with `storctl events`'] },
            );
          await sleep(500);
          node = await client.getNode(args.node);
        }
        this.logToStderr(`node ${args.node} drained`);
      }
      this.print(nodeListing([node]));
    } finally {
      await client.close();
    }
  }
}
