import { replicaUuidOfUri } from '../../lib/child-uri.js';
import type { RebuildHistoryRecord } from '../../lib/io-engine/types.js';
import { humanizeBytes } from '../../lib/output/humanize.js';
import type { RebuildRecord } from '../../lib/rest/types.js';
import type { EngineApi, NexusState } from './engine-api.js';
import type { EngineFactory } from './engines.js';
import { type CoreEvent, makeEvent } from './events.js';

interface Running {
  srcUri: string;
  startTime: string;
  /** The io-engine's start time of this rebuild (ms), when it reports one: its end time is then its own. */
  engineStart: number | null;
  /** Tick when the sighting that started the job arrived: only answers asked later may end it. */
  since: number;
  /** Last progress seen, 0..100. */
  percent: number;
  size: number;
  /** Partial rebuild (only the regions written while the child was away). */
  partial: boolean;
  /** Bytes of data written to the child, as last seen. */
  transferred: number;
}

/** The io-engines address blocks of 512 bytes (the nexus block size Mayastor reports). */
const BLOCK_SIZE = 512;
const MAX_RECORDS_PER_NEXUS = 64;
const MAX_NEXUSES = 10_000;

/**
 * Rebuild history as core observes it. The io-engines do not keep one, so every nexus state core
 * receives (poll, get, create, add child) is compared with the last: a child seen Degraded (being
 * rebuilt) starts a job; the same child later Online completes it, Faulted or gone fails it, a
 * destroyed nexus stops it. Kept in memory per nexus, bounded, dropped with the nexus — as the
 * io-engine keeps Mayastor's. A rebuild that starts and ends between two sightings is not seen.
 * Start and end times are the io-engine's where the child reports them (a poll may see the end
 * seconds late, which read as a rebuild that long), else when core saw them.
 */
export class RebuildHistory {
  private readonly running = new Map<string, Map<string, Running>>();
  private readonly records = new Map<string, RebuildRecord[]>();
  /** Node of each nexus with running jobs (missing from its node's next listing: it is gone). */
  private readonly nodeOf = new Map<string, string>();

  private ticks = 0;

  /** `onFinished` hears of every rebuild that ends (completed, failed or stopped), once. */
  constructor(private readonly onFinished?: (nexus: string, record: RebuildRecord) => void) {}

  /**
   * Take before asking an io-engine and pass to observe: an answer to a question asked before a
   * job was first seen may predate the job (concurrent calls) and must not end it.
   */
  tick(): number {
    return ++this.ticks;
  }

  /** Finished rebuilds of one nexus, oldest first. */
  of(nexus: string): RebuildRecord[] {
    return [...(this.records.get(nexus) ?? [])];
  }

  observe(st: NexusState, askedAt: number, node?: string): void {
    let jobs = this.running.get(st.uuid);
    // Fast path (every nexus at every poll): nothing rebuilding, nothing tracked.
    if (!jobs && !st.children.some((c) => c.state === 'Degraded' && c.rebuildProgress != null)) return;
    const now = new Date().toISOString();
    const arrived = this.tick();
    const fresh = (job: Running) => askedAt > job.since;
    const seen = new Set<string>();
    const source = st.children.find((c) => c.state === 'Online')?.uri ?? '';
    for (const c of st.children) {
      seen.add(c.uri);
      const job = jobs?.get(c.uri);
      if (c.state === 'Degraded' && c.rebuildProgress != null) {
        if (job) {
          job.percent = Math.max(job.percent, c.rebuildProgress);
          job.transferred = Math.max(job.transferred, c.rebuildTransferredBytes ?? 0);
        } else {
          jobs ??= new Map();
          this.running.set(st.uuid, jobs);
          jobs.set(c.uri, {
            srcUri: source,
            startTime: c.rebuildStartedAt ? new Date(c.rebuildStartedAt).toISOString() : now,
            engineStart: c.rebuildStartedAt ?? null,
            since: arrived,
            percent: c.rebuildProgress,
            size: st.size,
            partial: c.rebuildPartial === true,
            transferred: c.rebuildTransferredBytes ?? 0,
          });
        }
      } else if (job && fresh(job)) {
        // the child's count now covers the whole (finished) rebuild
        job.transferred = Math.max(job.transferred, c.rebuildTransferredBytes ?? 0);
        const ended =
          c.rebuildEndedAt && job.engineStart !== null && c.rebuildStartedAt === job.engineStart
            ? new Date(c.rebuildEndedAt).toISOString()
            : now;
        this.finish(st.uuid, c.uri, job, c.state === 'Online' ? 'Completed' : 'Failed', ended);
      }
    }
    for (const [uri, job] of jobs ?? [])
      if (!seen.has(uri) && fresh(job)) this.finish(st.uuid, uri, job, 'Failed', now);
    if (st.state === 'Shutdown') this.stopAll(st.uuid, askedAt);
    if (node && this.running.has(st.uuid)) this.nodeOf.set(st.uuid, node);
  }

  /** Every nexus of a node as just listed: tracked nexuses of that node not listed are gone. */
  observeNode(node: string, list: NexusState[], askedAt: number): void {
    for (const st of list) this.observe(st, askedAt, node);
    if (this.nodeOf.size === 0) return;
    const listed = new Set(list.map((n) => n.uuid));
    for (const [nexus, at] of this.nodeOf) {
      if (at === node && !listed.has(nexus)) this.stopAll(nexus, askedAt);
    }
  }

  /** The nexus was destroyed: running jobs stop, its history goes with it. */
  forget(nexus: string): void {
    this.stopAll(nexus, Number.POSITIVE_INFINITY);
    this.records.delete(nexus);
  }

  /** Stop the nexus' jobs that the answer asked at `askedAt` may end. */
  private stopAll(nexus: string, askedAt: number): void {
    const now = new Date().toISOString();
    for (const [uri, job] of this.running.get(nexus) ?? [])
      if (askedAt > job.since) this.finish(nexus, uri, job, 'Stopped', now);
  }

  private finish(
    nexus: string,
    childUri: string,
    job: Running,
    state: RebuildHistoryRecord['state'],
    endTime: string,
  ): void {
    const jobs = this.running.get(nexus);
    jobs?.delete(childUri);
    if (jobs?.size === 0) {
      this.running.delete(nexus);
      this.nodeOf.delete(nexus);
    }
    const total = Math.ceil(job.size / BLOCK_SIZE);
    // The data the io-engine wrote to the child: a partial rebuild copies only the dirty regions, and
    // neither kind sends stretches of zeroes.
    const transferred = Math.min(total, Math.ceil(job.transferred / BLOCK_SIZE));
    // The progress last seen may be seconds old when a job ends; a full rebuild copies in order, so
    // it got at least as far as what it wrote ("failed at 2%: 104MiB written" of 200 MiB read wrong).
    const seen = Math.floor((total * job.percent) / 100);
    const recovered = state === 'Completed' ? total : Math.max(seen, job.partial ? 0 : transferred);
    const list = this.records.get(nexus) ?? [];
    list.push({
      childUri,
      srcUri: job.srcUri,
      rebuildJobState: state,
      blocksTotal: total,
      blocksRecovered: recovered,
      blocksTransferred: transferred,
      blocksRemaining: total - recovered,
      blockSize: BLOCK_SIZE,
      isPartial: job.partial,
      startTime: job.startTime,
      endTime,
    });
    if (list.length > MAX_RECORDS_PER_NEXUS) list.splice(0, list.length - MAX_RECORDS_PER_NEXUS);
    // Re-insert so the map iterates least recently updated first; the oldest nexus goes past the cap.
    this.records.delete(nexus);
    this.records.set(nexus, list);
    if (this.records.size > MAX_NEXUSES) this.records.delete(this.records.keys().next().value!);
    this.onFinished?.(nexus, list[list.length - 1]);
  }
}

const ENDED: Partial<Record<RebuildRecord['rebuildJobState'], string>> = {
  Completed: 'Rebuilt',
  Failed: 'RebuildFailed',
  Stopped: 'RebuildStopped',
};

/**
 * The event of a finished rebuild of `volume`'s target: which replica, from which, how it ended and
 * what it wrote. It closes the `Rebuilding` event that re-added the child, so the log says when a
 * volume has all its copies again without waiting for the next status change core records.
 */
export function rebuildEvent(volume: string, r: RebuildRecord): CoreEvent {
  const replica = (uri: string) => replicaUuidOfUri(uri) || uri || '<none>';
  const from = `replica ${replica(r.childUri)}`;
  const what =
    r.rebuildJobState === 'Completed'
      ? `${from} rebuilt from ${replica(r.srcUri)}`
      : `rebuild of ${from} from ${replica(r.srcUri)} ${r.rebuildJobState === 'Failed' ? 'failed' : 'stopped'} at ${Math.floor((100 * r.blocksRecovered) / Math.max(1, r.blocksTotal))}%`;
  const seconds = (Date.parse(r.endTime) - Date.parse(r.startTime)) / 1000;
  const took = Number.isFinite(seconds) ? `, ${seconds.toFixed(1)} s` : '';
  const written = humanizeBytes(r.blocksTransferred * r.blockSize);
  return makeEvent(
    'volume',
    volume,
    ENDED[r.rebuildJobState] ?? r.rebuildJobState,
    `${what}: ${written} written, ${r.isPartial ? 'partial' : 'full'} rebuild${took}`,
  );
}

/**
 * Wrap an engine factory so every nexus state an io-engine returns passes through `history`. A
 * Proxy, so EngineApi methods added later pass through untouched.
 */
export function observeRebuilds(factory: EngineFactory, history: RebuildHistory): EngineFactory {
  return (nodeId, endpoint) => {
    const api = factory(nodeId, endpoint);
    const seen = async (ask: () => Promise<NexusState>) => {
      const askedAt = history.tick();
      const st = await ask();
      history.observe(st, askedAt, nodeId);
      return st;
    };
    const wrapped: Partial<EngineApi> = {
      listNexuses: async () => {
        const askedAt = history.tick();
        const list = await api.listNexuses();
        history.observeNode(nodeId, list, askedAt);
        return list;
      },
      getNexus: (uuid) => seen(() => api.getNexus(uuid)),
      createNexus: (n) => seen(() => api.createNexus(n)),
      addChild: (nexus, uri) => seen(() => api.addChild(nexus, uri)),
      destroyNexus: async (uuid) => {
        await api.destroyNexus(uuid);
        history.forget(uuid);
      },
    };
    return new Proxy(api, {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && Object.hasOwn(wrapped, prop)) return wrapped[prop as keyof EngineApi];
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  };
}
