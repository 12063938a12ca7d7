import { Flags } from '@oclif/core';
import { type CoreEvent, eventsPrefix } from '../daemons/core/events.js';
import { StorctlCommand } from '../lib/command.js';
import type { Listing } from '../lib/output/render.js';
import { openStore } from '../lib/store/open.js';

const listing = (rows: CoreEvent[]): Listing<CoreEvent> => ({
  rows,
  columns: [
    { header: 'TIME', get: (e) => e.time },
    { header: 'RESOURCE', get: (e) => e.resource },
    { header: 'ID', get: (e) => e.id },
    { header: 'ACTION', get: (e) => e.action },
    { header: 'MESSAGE', get: (e) => e.message },
  ],
});

const parse = (value: string): CoreEvent | null => {
  try {
    return JSON.parse(value) as CoreEvent;
  } catch {
    return null;
  }
};

export default class Events extends StorctlCommand {
  static override description =
    "show core's lifecycle events (volumes, replicas, nexuses, pools, nodes), read straight from the store; --watch follows new ones";
  static override examples = [
    '<%= config.bin %> events',
    '<%= config.bin %> events --resource volume --limit 20',
    '<%= config.bin %> events --watch -o json',
  ];
  static override flags = {
    watch: Flags.boolean({
      char: 'w',
      description: 'keep printing new events until interrupted',
      default: false,
    }),
    limit: Flags.integer({ description: 'show only the newest N events', default: 100, min: 1 }),
    resource: Flags.string({
      description: 'only events of this resource kind',
      options: ['volume', 'replica', 'nexus', 'pool', 'node', 'snapshot', 'core'],
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Events);
    const store = await openStore(this.globals.storeUrl, { tls: this.globals.tls });
    try {
      const prefix = eventsPrefix(this.globals.keySpace);
      const keep = (e: CoreEvent | null): e is CoreEvent =>
        !!e && (!flags.resource || e.resource === flags.resource);
      const { kvs, revision } = await store.range(prefix);
      const events = kvs
        .map((kv) => parse(kv.value))
        .filter(keep)
        .slice(-flags.limit);
      const streaming = flags.watch && (this.globals.output === 'json' || this.globals.output === 'yaml');
      if (streaming) for (const e of events) this.log(JSON.stringify(e));
      else if (events.length || !flags.watch) this.print(listing(events));
      if (!flags.watch) return;
      const watch = await store.watch(prefix, { fromRevision: revision + 1 });
      await new Promise<void>((resolve) => {
        watch.on('event', (ev) => {
          if (ev.type !== 'put') return;
          const e = parse(ev.kv.value);
          if (!keep(e)) return;
          this.log(
            streaming ? JSON.stringify(e) : `${e.time}  ${e.resource}/${e.id}  ${e.action}  ${e.message}`,
          );
        });
        watch.on('error', (err) => this.logToStderr(`watch error: ${err.message}`));
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      await watch.close();
    } finally {
      await store.close();
    }
  }
}
