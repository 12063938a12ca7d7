import { Flags } from '@oclif/core';
import { type CoreEvent, followEvents, listEvents } from '../lib/catalog/events.js';
import { StorctlCommand } from '../lib/command.js';
import { UsageError } from '../lib/errors.js';
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

  static override templateOutput = true;

  async run(): Promise<void> {
    const { flags } = await this.parse(Events);
    if (flags.watch && this.globals.template)
      throw new UsageError(
        `--watch prints events as they come; -o ${this.globals.output} needs the whole listing`,
        {
          suggestions: ['storctl events --watch -o json | jq …'],
        },
      );
    const store = await openStore(this.globals.storeUrl, { tls: this.globals.tls, existing: true });
    try {
      const space = this.globals.keySpace;
      const { events, revision } = await listEvents(store, space, {
        resource: flags.resource,
        limit: flags.limit,
      });
      const streaming = flags.watch && (this.globals.output === 'json' || this.globals.output === 'yaml');
      if (streaming) for (const e of events) this.log(JSON.stringify(e));
      else if (events.length || !flags.watch) this.print(listing(events));
      if (!flags.watch) return;
      const interrupted = new AbortController();
      const stop = () => interrupted.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await followEvents(store, space, {
        resource: flags.resource,
        fromRevision: revision + 1,
        signal: interrupted.signal,
        onEvent: (e) =>
          this.log(
            streaming ? JSON.stringify(e) : `${e.time}  ${e.resource}/${e.id}  ${e.action}  ${e.message}`,
          ),
        onError: (err) => this.logToStderr(`watch error: ${err.message}`),
      });
    } finally {
      await store.close();
    }
  }
}
