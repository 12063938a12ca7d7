import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { applyLoad, planLoad } from '../../lib/catalog/load.js';
import { withStore } from '../../lib/catalog/with-store.js';
import { StorctlCommand } from '../../lib/command.js';
import { UsageError } from '../../lib/errors.js';

export default class StoreLoad extends StorctlCommand {
  static override description =
    'load a dump written by `store dump`: validates every line first, then writes all or nothing. Replicas and targets the io-engines hold that the dump does not name (volumes made after it) are left where they are: core says each in an Orphaned event, and `storctl orphans` lists them';
  static override examples = [
    '<%= config.bin %> <%= command.id %> backup.jsonl',
    '<%= config.bin %> <%= command.id %> backup.jsonl --dry-run',
    '<%= config.bin %> <%= command.id %> backup.jsonl --force   # also values of types storctl does not know',
  ];
  static override args = {
    file: Args.string({ description: 'dump file (one JSON record per line)', required: true }),
  };
  static override flags = {
    force: Flags.boolean({ description: 'load values of unknown record types without checking them' }),
    'dry-run': Flags.boolean({ description: 'validate only; write nothing' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(StoreLoad);
    const text = await readFile(args.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(
        `cannot read ${args.file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`,
      );
    });
    const plan = planLoad(text, this.globals.keySpace, { force: flags.force });
    if (plan.unknownTypes.length)
      this.logToStderr(
        `warning: ${plan.unknownTypes.length} values of unknown types loaded unchecked (--force)`,
      );
    if (plan.skippedLeased.length)
      this.logToStderr(
        `skipped ${plan.skippedLeased.length} lease-bound keys (liveness, locks): they belong to live processes`,
      );
    if (flags['dry-run']) {
      this.log(`${plan.records.length} records valid; nothing written (--dry-run)`);
      return;
    }
    const { written } = await withStore(this.globals, (store) => applyLoad(store, plan), { create: true });
    this.log(`loaded ${written} records into ${this.globals.storeUrl}`);
  }
}
