import { Flags } from '@oclif/core';
import { type CoreEvent, EVENT_RESOURCES, followEvents, listEvents } from '../lib/catalog/events.js';
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
    'show the lifecycle events core and ha-cluster record (volumes, replicas, nexuses, pools, nodes, snapshots, switchovers), read straight from the store; --watch follows new ones';
  static override examples = [
    '<%= config.bin %> events',
    '<%= config.bin %> events --resource volume --limit 20',
    '<%= config.bin %> events --id 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b   # one volume (its switchovers too)',
    '<%= config.bin %> events --resource switchover --watch',
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
      options: [...EVENT_RESOURCES],
    }),
    id: Flags.string({
      description: 'only events about the resource with this id (a volume uuid, a node id, …)',
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
        id: flags.id,
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
        id: flags.id,
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
