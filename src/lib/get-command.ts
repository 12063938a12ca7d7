import { Flags } from '@oclif/core';
import type { Input, ParserOutput } from '@oclif/core/interfaces';
import { aboutVolume, byId, type ClusterState, missingRecord, readCluster } from './catalog/cluster.js';
import type { LiveAnswer, LiveKind, LiveUnavailable } from './catalog/live.js';
import { countSnapshots } from './catalog/snapshot-counts.js';
import { streamSpecs, volumeTableRows } from './catalog/stream.js';
import { snapshotCounts, volumeColumns } from './catalog/views/volumes.js';
import { withStore } from './catalog/with-store.js';
import { StorctlCommand, writeStdout } from './command.js';
import { type DecodeError, ExitCode, UsageError } from './errors.js';
import { type Listing, shownColumns } from './output/render.js';
import { clusterHeaderValue } from './rest/endpoint.js';
import type { SpecType, SpecTypes } from './specs/index.js';
import { clusterPrefix } from './store/keys.js';
import type { Store } from './store/types.js';

// biome-ignore lint/suspicious/noExplicitAny: mirrors oclif's own definition (as in command.ts)
type FlagOutput = { [name: string]: any };
// biome-ignore lint/suspicious/noExplicitAny: mirrors oclif's own definition (as in command.ts)
type ArgOutput = { [name: string]: any };

export const selectorFlag = Flags.string({
  char: 'l',
  description: 'only resources with these labels: key=value[,key=value]',
});

/**
 * Base of the `get` commands: read what they need straight from the store (every daemon may be
 * down), print it, and report values that failed to decode after the rest (exit code 8).
 */
export abstract class GetCommand extends StorctlCommand {
  static override templateOutput = true;

  static override baseFlags = {
    ...StorctlCommand.baseFlags,
    'no-headers': Flags.boolean({ description: 'print tables without their header line', default: false }),
    watch: Flags.boolean({
      char: 'w',
      description: 'print the table again whenever the store changes, until Ctrl-C',
      default: false,
    }),
  };

  private watchFlag = false;

  protected override async parse<F extends FlagOutput, B extends FlagOutput, A extends ArgOutput>(
    options?: Input<F, B, A>,
    argv?: string[],
  ): Promise<ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv);
    this.noHeaders = (parsed.flags as { 'no-headers'?: boolean })['no-headers'] === true;
    this.watchFlag = (parsed.flags as { watch?: boolean }).watch === true;
    if (this.watchFlag && this.globals.output !== 'table' && this.globals.output !== 'wide')
      throw new UsageError(
        '--watch prints tables; with -o json|yaml follow changes with `storctl events --watch`',
      );
    return parsed;
  }

  protected async show<T>(
    types: readonly (SpecType | 'NodeLiveness')[],
    build: (state: ClusterState) => Listing<T>,
    {
      live = [],
      liveInTables = true,
      answer,
      volume,
    }: {
      /** What core's live state the listing joins when core answers. */
      live?: readonly LiveKind[];
      /** false: only -o json|yaml|templates print it (the table has no column for it). */
      liveInTables?: boolean;
      /** Core's answer when the caller already asked (the state is not read twice). */
      answer?: LiveAnswer;
      /** The one volume the listing is about: only what mentions it is read, core asked for it alone. */
      volume?: string;
    } = {},
  ): Promise<void> {
    // custom-columns and jsonpath read the objects -o json prints, not the table's cells.
    const table = this.globals.output === 'table' || this.globals.output === 'wide';
    const once = async (store: Store) => {
      const state = await readCluster(
        store,
        this.globals.keySpace,
        types,
        volume === undefined ? undefined : aboutVolume(volume),
      );
      const noLive =
        live.length && (liveInTables || !table)
          ? await this.joinLive(state, live, answer, volume)
          : undefined;
      const listing = build(state);
      // Said once the listing is made: a listing that fails (NotFound, undecodable) gets its error alone.
      if (noLive) this.noteNoLive(noLive);
      this.print(listing);
      return state;
    };
    if (!this.watchFlag) {
      const state = await withStore(this.globals, once);
      this.reportDecodeErrors(state.errors);
      return;
    }
    await withStore(this.globals, (store) => this.watchTable(store, once));
  }

  /** `--watch`: the table again after every change of the cluster's keys (coalesced), until a signal. */
  private async watchTable(store: Store, once: (store: Store) => Promise<ClusterState>): Promise<void> {
    const { revision } = await store.range(`${clusterPrefix(this.globals.keySpace)}/`, { limit: 1 });
    await once(store);
    const watch = await store.watch(`${clusterPrefix(this.globals.keySpace)}/`, {
      fromRevision: revision + 1,
    });
    let pending: NodeJS.Timeout | null = null;
    let printing = Promise.resolve();
    watch.on('event', () => {
      pending ??= setTimeout(() => {
        pending = null;
        printing = printing.then(async () => {
          this.log('');
          await once(store);
        });
      }, 250);
    });
    watch.on('error', (err) => this.logToStderr(`note: watch: ${err.message}`));
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    if (pending) clearTimeout(pending);
    await watch.close();
    await printing;
  }

  /**
   * A plain spec listing: tables go through `show` (they need every row for column widths and
   * derived columns); json/yaml stream the stored specs one by one in constant memory.
   */
  protected async showSpecs<K extends SpecType, T>(
    type: K,
    filter: ((value: SpecTypes[K]) => boolean) | undefined,
    types: readonly (SpecType | 'NodeLiveness')[],
    build: (state: ClusterState) => Listing<T>,
    options: { live?: readonly LiveKind[] } = {},
  ): Promise<void> {
    const format = this.globals.output;
    if (format !== 'json' && format !== 'yaml') return this.show(types, build, options);
    const errors = await withStore(this.globals, (store) =>
      streamSpecs(store, this.globals.keySpace, type, format, writeStdout, { filter }),
    );
    this.reportDecodeErrors(errors);
  }

  /**
   * All volumes: tables through `show` when core answers (joined to its state), else made from the
   * store on the validation worker; json/yaml streamed as REST's volume objects — core's own, page
   * by page, when it answers, else each stored spec in REST's shape without the state.
   */
  protected async showVolumes<T>(
    types: readonly (SpecType | 'NodeLiveness')[],
    build: (state: ClusterState) => Listing<T>,
  ): Promise<void> {
    const format = this.globals.output;
    if ((format === 'table' || format === 'wide') && !this.watchFlag) {
      const answer = await this.liveAnswer(['volumes']);
      if ('live' in answer) return this.show(types, build, { live: ['volumes'], answer });
      return this.showStoredVolumeTable(format === 'wide', answer);
    }
    if (format !== 'json' && format !== 'yaml') return this.show(types, build, { live: ['volumes'] });
    const { liveRestUrl, streamLiveVolumes } = await import('./catalog/live.js');
    const url = liveRestUrl(this.globals.storeUrl);
    if (url) {
      const missing = await streamLiveVolumes(
        url,
        clusterHeaderValue(this.globals.keySpace),
        format,
        writeStdout,
      );
      if (!missing) return;
      this.noteNoLive(missing);
    }
    const errors = await withStore(this.globals, async (store) => {
      const counted = await countSnapshots(store, this.globals.keySpace);
      const listed = await streamSpecs(store, this.globals.keySpace, 'VolumeSpec', format, writeStdout, {
        present: { snapshotCounts: counted.counts },
      });
      return [...counted.errors, ...listed];
    });
    this.reportDecodeErrors(errors);
  }

  /**
   * `get volumes` as a table when core does not answer: the volumes are decoded and turned into
   * their rows on the validation worker while this thread reads on (volumeTableRows). Why core's
   * state is missing is said once the store was read: a store that fails gets its error alone.
   */
  private async showStoredVolumeTable(wide: boolean, noLive: LiveUnavailable): Promise<void> {
    const errors = await withStore(this.globals, async (store) => {
      const state = await readCluster(store, this.globals.keySpace, ['VolumeSnapshot', 'NexusInfo']);
      const { rows, errors } = await volumeTableRows(store, this.globals.keySpace, {
        snapshotCounts: snapshotCounts(state),
        table: { wide, nexusInfo: state.nexusInfo },
      });
      // Key order is the listings' id order for canonical uuids; any other id is sorted as they are.
      if (rows.some((r, i) => i > 0 && byId.compare(rows[i - 1][0], r[0]) > 0))
        rows.sort((a, b) => byId.compare(a[0], b[0]));
      const headers = shownColumns(volumeColumns(state), wide).map((c) => c.header);
      this.noteNoLive(noLive);
      this.print({ rows, columns: headers.map((header, i) => ({ header, get: (r: string[]) => r[i] })) });
      return [...state.errors, ...errors];
    });
    this.reportDecodeErrors(errors);
  }

  /**
   * One object (`get volume ID`, and `get volumes ID` as kubectl allows): its listing printed as a
   * single object, NotFound (exit 3) when the filtered listing is empty, or its decode error (exit
   * 8) when it is there but does not decode. `types` starts with the object's own type.
   */
  protected async showOne<T>(
    resource: string,
    id: string,
    types: readonly (SpecType | 'NodeLiveness')[],
    build: (state: ClusterState) => Listing<T>,
    options: { live?: readonly LiveKind[]; volume?: string } = {},
  ): Promise<void> {
    await this.show(
      types,
      (state) => {
        const listing = build(state);
        if (!listing.rows.length) throw missingRecord(state, types[0] as SpecType, resource, id);
        return { ...listing, single: true };
      },
      options,
    );
  }

  /** Core's live state of these kinds, or why there is none. */
  private async liveAnswer(kinds: readonly LiveKind[], volume?: string): Promise<LiveAnswer> {
    // Loaded here: listings that need no live state need not load the REST client (undici).
    const { liveRestUrl, readLive } = await import('./catalog/live.js');
    const url = liveRestUrl(this.globals.storeUrl);
    return url
      ? await readLive(
          url,
          kinds,
          clusterHeaderValue(this.globals.keySpace),
          volume === undefined ? undefined : [volume],
        )
      : { unavailable: 'core is not reachable' };
  }

  /** Join core's live state (read now, unless given) to a listing; without it, why there is none. */
  private async joinLive(
    state: ClusterState,
    kinds: readonly LiveKind[],
    given?: LiveAnswer,
    volume?: string,
  ): Promise<LiveUnavailable | undefined> {
    const answer = given ?? (await this.liveAnswer(kinds, volume));
    if ('live' in answer) state.live = answer.live;
    else return answer;
  }

  /**
   * Said once, on stderr, when a listing shows the store alone. A table always says it; -o
   * json|yaml|templates only when core answered for another cluster (a setting to fix): an object
   * without `state` says the rest, and stderr stays for errors (one JSON object with -o json).
   */
  private noteNoLive(why: LiveUnavailable): void {
    const table = this.globals.output === 'table' || this.globals.output === 'wide';
    if (!table && !why.otherCluster) return;
    this.logToStderr(
      `note: ${why.unavailable}: showing stored specs only (${table ? 'capacity, usage and target URIs need' : 'state needs'} a running core of this cluster)`,
    );
  }

  private reportDecodeErrors(errors: DecodeError[]): void {
    if (!errors.length) return;
    for (const err of errors) this.logToStderr(`Error: ${err.message}`);
    this.logToStderr(
      `Try: storctl store dump | grep <key> to inspect the raw value${errors.length > 1 ? 's' : ''}`,
    );
    this.exit(ExitCode.corrupt);
  }
}
