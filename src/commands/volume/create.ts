import { randomUUID } from 'node:crypto';
import { Args, Flags } from '@oclif/core';
import { parseLabels } from '../../lib/cli-args.js';
import { UsageError } from '../../lib/errors.js';
import { sizeArg, uuidArg, volumeListing } from '../../lib/rest/cli.js';
import { snapshotSize } from '../../lib/rest/snapshot-size.js';
import { RestCommand } from '../../lib/rest-command.js';

export default class VolumeCreate extends RestCommand {
  static override description =
    'create a replicated volume: replicas are placed on distinct nodes and created on their io-engines';
  static override examples = [
    '<%= config.bin %> volume create --size 1GiB --replicas 3',
    '<%= config.bin %> volume create 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b --size 10GiB --replicas 2 --thin -o json',
    '<%= config.bin %> volume create --from-snapshot 6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d --replicas 3   # restore',
    "ID=$(<%= config.bin %> volume create --size 1Gi --replicas 3 -o jsonpath='{.spec.uuid}')",
  ];
  static override args = { id: Args.string({ description: 'volume uuid (default: a new one)' }) };
  static override flags = {
    size: Flags.string({
      description: "volume size, e.g. 1GiB (with --from-snapshot: the snapshot's, which is the default)",
    }),
    'from-snapshot': Flags.string({
      description: "restore a snapshot: the volume is made from it, with the snapshot's data and size",
    }),
    replicas: Flags.integer({ description: 'number of replicas', default: 1, min: 1, max: 255 }),
    thin: Flags.boolean({ description: 'thin-provision the replicas', default: false }),
    'no-self-heal': Flags.boolean({
      description: 'do not replace lost replicas automatically',
      default: false,
    }),
    label: Flags.string({ description: 'volume label KEY=VALUE (repeatable)', multiple: true }),
  };

  static override templateOutput = true;

  async run(): Promise<void> {
    const { args, flags } = await this.parse(VolumeCreate);
    const id = args.id ? uuidArg('volume id', args.id) : randomUUID();
    const labels = parseLabels(flags.label);
    const snapshot = flags['from-snapshot'] && uuidArg('snapshot id', flags['from-snapshot']);
    if (!snapshot && flags.size === undefined)
      throw new UsageError('--size is required (or --from-snapshot, to restore a snapshot)', {
        suggestions: ['storctl volume create --size 1Gi --replicas 3'],
      });
    const size =
      flags.size !== undefined
        ? sizeArg('size', flags.size)
        : snapshotSize(await this.client.getSnapshot(snapshot as string));
    const body = {
      size,
      replicas: flags.replicas,
      thin: flags.thin,
      policy: { self_heal: !flags['no-self-heal'] },
      ...(labels ? { labels } : {}),
    };
    const v = snapshot
      ? await this.client.createCloneVolume(snapshot, id, body)
      : await this.client.createVolume(id, body);
    this.print(volumeListing([v]));
  }
}
