import { stat } from 'node:fs/promises';
import { type ClusterState, readCluster } from '../catalog/cluster.js';
import { type CoreEvent, listEvents } from '../catalog/events.js';
import { clusterHeaderValue } from '../rest/endpoint.js';
import type { SpecType } from '../specs/index.js';
import { clusterPrefix, type KeySpace } from '../store/keys.js';
import type { Store, Watch } from '../store/types.js';
import { applyWatchEvent } from './apply.js';
import { type CoreLive, LivePoller } from './live.js';
import { type MountSlot, mountStateFile, readMountSlot } from './mounts.js';

export const DASHBOARD_TYPES: readonly (SpecType | 'NodeLiveness')[] = [
  'NodeSpec',
  'NodeLiveness',
  'PoolSpec',
  'ReplicaSpec',
  'NexusSpec',
  'NexusInfo',
  'VolumeSpec',
  'VolumeSnapshot',
  'SwitchOver',
];

export interface DashboardModelOptions {
  store: Store;
  space: KeySpace;
  /** Core's REST URL when it is known to serve this store (liveRestUrl); null: store only. */
  restUrl?: string | null;
  /** The mounter state directory of this machine; absent: the S3 mounts slot says so. */
  mounterStateDir?: string;
  /** Changes are announced at most this often (ms). */
  coalesceMs?: number;
  /** How often the mounter's state file is checked for changes (default 2 s; tests poll faster). */
  mountPollMs?: number;
  /** Newest events kept in the log. */
  eventsKept?: number;
}

/** What the view renders; `version` grows with every announced change. */
export interface Snapshot {
  version: number;
  state: ClusterState;
  events: CoreEvent[];
  live: CoreLive | null;
  mounts: MountSlot | null;
  /** Why the store watch stopped, when it did. */
  watchError: string | null;
}

/**
 * The dashboard's data: one initial read of the cluster, then a watch of the whole cluster prefix
 * from that read's revision (never a re-read loop), core's live state when it answers, and change
 * notifications coalesced to one per `coalesceMs` however fast the store changes.
 */
export class DashboardModel {
  private snapshot: Snapshot;
  private readonly listeners = new Set<() => void>();
  private watch: Watch | null = null;
  private poller: LivePoller | null = null;
  private pending: NodeJS.Timeout | null = null;
  private lastEmit = 0;
  private readonly coalesceMs: number;
  private readonly eventsKept: number;
  private mountPoll: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly options: DashboardModelOptions) {
    this.coalesceMs = options.coalesceMs ?? 150;
    this.eventsKept = options.eventsKept ?? 500;
    this.snapshot = {
      version: 0,
      state: { specs: {}, nexusInfo: new Map(), liveness: new Map(), errors: [] },
      events: [],
      live: null,
      mounts: null,
      watchError: null,
    };
  }

  async start(): Promise<void> {
    await this.follow();
    if (this.options.restUrl) {
      this.poller = new LivePoller(this.options.restUrl, clusterHeaderValue(this.options.space), (live) =>
        this.update({ live }),
      );
      this.poller.start();
    }
    const dir = this.options.mounterStateDir;
    if (dir) await this.pollMounts(dir, '');
  }

  /** Read the cluster once, then watch it from that read's revision; again after a compaction. */
  private async follow(): Promise<void> {
    const { store, space } = this.options;
    const prefix = `${clusterPrefix(space)}/`;
    // The revision first: the paged read below may see later writes too, which the watch replays
    // harmlessly (applying an event is idempotent).
    const { revision } = await store.range(prefix, { limit: 1 });
    const [state, { events }] = await Promise.all([
      readCluster(store, space, DASHBOARD_TYPES),
      listEvents(store, space, { limit: this.eventsKept }),
    ]);
    this.snapshot = { ...this.snapshot, state, events, watchError: null, version: this.snapshot.version + 1 };
    if (this.stopped) return;
    const watch = await store.watch(prefix, { fromRevision: revision + 1 });
    this.watch = watch;
    watch.on('event', (ev) => {
      // Events flow again after a reported error (the watch reconnected): the error is past.
      if (this.snapshot.watchError) this.update({ watchError: null });
      if (
        applyWatchEvent(this.snapshot.state, this.snapshot.events, space, ev, this.eventsKept) !== 'ignored'
      )
        this.changed();
    });
    watch.on('error', (err) => this.update({ watchError: err.message }));
    // The history from our revision is gone (etcd compacted it while we lagged): read afresh.
    watch.on('compacted', () => {
      void watch
        .close()
        .then(() => this.follow())
        .catch((err: Error) => this.update({ watchError: `re-reading after a compaction: ${err.message}` }));
    });
    this.changed();
  }

  getSnapshot = (): Snapshot => this.snapshot;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  private update(patch: Partial<Snapshot>): void {
    this.snapshot = { ...this.snapshot, ...patch };
    this.changed();
  }

  /** Announce a change: now when the last one is older than coalesceMs, else once at its end. */
  private changed(): void {
    if (this.pending) return;
    const wait = Math.max(0, this.lastEmit + this.coalesceMs - Date.now());
    this.pending = setTimeout(() => {
      this.pending = null;
      this.lastEmit = Date.now();
      this.snapshot = { ...this.snapshot, version: this.snapshot.version + 1 };
      for (const l of this.listeners) l();
    }, wait);
  }

  /**
   * The mounter keeps its records in a file, not the store: read it, then stat it every
   * `mountPollMs` and read it again when it changed since the read. The baseline is what this
   * read saw (fs.watchFile's own first stat could already include a file written meanwhile, and
   * that change was then never seen); one poll at a time, so reads cannot finish out of order.
   */
  private async pollMounts(dir: string, seen: string): Promise<void> {
    const file = mountStateFile(dir);
    const st = await stat(file).catch(() => null);
    const now = st ? `${st.ino}:${st.size}:${st.mtimeMs}` : 'none';
    if (now !== seen) this.update({ mounts: await readMountSlot(dir) });
    if (this.stopped) return;
    this.mountPoll = setTimeout(() => void this.pollMounts(dir, now), this.options.mountPollMs ?? 2_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.mountPoll) clearTimeout(this.mountPoll);
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
    this.listeners.clear();
    await this.poller?.stop();
    await this.watch?.close();
  }
}
