import { Help } from '@oclif/core';

/** Root help with the examples an operator reaches for first (oclif's root help has none). */
export default class StorctlHelp extends Help {
  protected override async showRootHelp(): Promise<void> {
    await super.showRootHelp();
    this.log(
      [
        'EXAMPLES',
        '  Start a single-machine cluster (core, io-engines, mounter) on the embedded store',
        '    $ storctl up',
        '',
        '  List volumes straight from the store, even with every daemon down',
        '    $ storctl get volumes',
        '',
        '  Read a real Mayastor etcd',
        '    $ storctl get volumes --store etcd://10.0.0.5:2379 --cluster-id <kube-system uid> --namespace mayastor',
        '',
        '  Back up every key of the cluster',
        '    $ storctl store dump --file backup.jsonl',
        '',
      ].join('\n'),
    );
  }
}
