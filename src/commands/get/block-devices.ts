import { Args, Flags } from '@oclif/core';
import { humanizeBytes } from '../../lib/output/humanize.js';
import type { Listing } from '../../lib/output/render.js';
import type { BlockDevice } from '../../lib/rest/types.js';
import { RestCommand } from '../../lib/rest-command.js';

function blockDeviceListing(rows: BlockDevice[]): Listing<BlockDevice> {
  return {
    rows,
    columns: [
      { header: 'DEVNAME', get: (d) => d.devname },
      { header: 'DEVTYPE', get: (d) => d.devtype },
      { header: 'SIZE', get: (d) => humanizeBytes(d.size * 512) },
      { header: 'AVAILABLE', get: (d) => d.available },
      { header: 'MODEL', get: (d) => d.model },
      { header: 'FSTYPE', get: (d) => d.filesystem?.fstype },
      { header: 'MOUNTPOINT', get: (d) => d.filesystem?.mountpoint },
      { header: 'FSUUID', get: (d) => d.filesystem?.uuid, wide: true },
      { header: 'PARTTYPE', get: (d) => d.partition?.scheme, wide: true },
      { header: 'MAJOR', get: (d) => d.devmajor, wide: true },
      { header: 'MINOR', get: (d) => d.devminor, wide: true },
      { header: 'DEVPATH', get: (d) => d.devpath, wide: true },
      { header: 'DEVLINKS', get: (d) => d.devlinks.join(','), wide: true },
    ],
  };
}

export default class GetBlockDevices extends RestCommand {
  static override description =
    "list a node's block devices as its io-engine sees them, through core's REST API (core must run: unlike the other get commands it does not read the store); usable ones unless --all: not mounted, no filesystem, no partitions, writable";
  static override examples = [
    '<%= config.bin %> <%= command.id %> node-1',
    '<%= config.bin %> <%= command.id %> node-1 --all -o wide',
    '<%= config.bin %> <%= command.id %> node-1 -o json',
  ];
  static override args = { node: Args.string({ description: 'node id', required: true }) };
  static override flags = {
    all: Flags.boolean({
      description: 'also list devices in use (mounted, formatted, partitioned)',
      default: false,
    }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(GetBlockDevices);
    const rows = await this.client.call<BlockDevice[]>(
      'GET',
      `/nodes/${encodeURIComponent(args.node)}/block_devices`,
      undefined,
      { all: flags.all },
    );
    this.print(blockDeviceListing(rows));
  }
}
