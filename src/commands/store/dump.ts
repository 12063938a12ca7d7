import { createWriteStream } from 'node:fs';
import { Flags } from '@oclif/core';
import { stringify as stringifyYaml } from 'yaml';
import { dumpStore } from '../../lib/catalog/dump.js';
import { withStore } from '../../lib/catalog/with-store.js';
import { StorctlCommand } from '../../lib/command.js';

export default class StoreDump extends StorctlCommand {
  static override description =
    'write every key under the cluster prefix, one JSON object per line (what `store load` reads); -o json writes them as one JSON array, -o yaml as a YAML list';
  static override examples = [
    '<%= config.bin %> <%= command.id %> > backup.jsonl',
    '<%= config.bin %> <%= command.id %> -o yaml | less',
    '<%= config.bin %> <%= command.id %> --file backup.jsonl --store etcd://10.0.0.5:2379',
  ];
  static override flags = {
    file: Flags.string({ char: 'f', description: 'write to this file instead of stdout' }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(StoreDump);
    await withStore(this.globals, async (store) => {
      const out = flags.file ? createWriteStream(flags.file, { mode: 0o600 }) : process.stdout;
      const format = this.globals.output;
      let count = 0;
      if (format === 'json') out.write('[\n');
      await dumpStore(store, this.globals.keySpace, (line) => {
        if (format === 'yaml') out.write(stringifyYaml([JSON.parse(line)]));
        else out.write(format === 'json' ? `${count ? ',\n' : ''}  ${line}` : `${line}\n`);
        count++;
      });
      if (format === 'json') out.write(count ? '\n]\n' : ']\n');
      if (flags.file) {
        await new Promise<void>((resolve, reject) =>
          (out as ReturnType<typeof createWriteStream>).end((err?: Error | null) =>
            err ? reject(err) : resolve(),
          ),
        );
        this.logToStderr(`dumped ${count} keys to ${flags.file}`);
      }
    });
  }
}
