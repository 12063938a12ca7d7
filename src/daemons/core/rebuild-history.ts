import type { EngineApi, NexusState } from './engine-api.js';
import type { EngineFactory } from './engines.js';

/** One finished rebuild, with Mayastor's RebuildHistory record fields (REST camelCase). */
export interface RebuildRecord {
  childUri: string;
  srcUri: string;
  rebuildJobState: 'Completed' | 'Failed' | 'Stopped';
  blocksTotal: number;
  blocksRecovered: number;
  blocksTransferred: number;
  blocksRemaining: number;
  blockSize: number;
  isPartial: boolean;
  startTime: string;
  endTime: string;
}

interface Running {
  srcUri: string;
  startTime: string;
  /** Last progress seen, 0..100. */
  percent: number;
  size: number;
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
 */
export class RebuildHistory {
  private readonly running = new Map<string, Map<string, Running>>();
  private readonly records = new Map<string, RebuildRecord[]>();
  /** Node of each nexus seen in a listing (a nexus missing from its node's next listing is gone). */
  private readonly nodeOf = new Map<string, string>();

  /** Finished rebuilds of one nexus, oldest first. */
  of(nexus: string): RebuildRecord[] {
    return [...(this.records.get(nexus) ?? [])];
  }

  observe(st: NexusState): void {
    const now = new Date().toISOString();
    let jobs = this.running.get(st.uuid);
    const seen = new Set<string>();
    const source = st.children.find((c) => c.state === 'Online')?.uri ?? '';
    for (const c of st.children) {
      seen.add(c.uri);
      const job = jobs?.get(c.uri);
      if (c.state === 'Degraded' && c.rebuildProgress != null) {
        if (job) job.percent = Math.max(job.percent, c.rebuildProgress);
        else {
          jobs ??= new Map();
          this.running.set(st.uuid, jobs);
          jobs.set(c.uri, { srcUri: source, startTime: now, percent: c.rebuildProgress, size: st.size });
        }
      } else if (job) {
        this.finish(st.uuid, c.uri, job, c.state === 'Online' ? 'Completed' : 'Failed', now);
      }
    }
    for (const [uri, job] of jobs ?? []) if (!seen.has(uri)) this.finish(st.uuid, uri, job, 'Failed', now);
    if (st.state === 'Shutdown') this.stopAll(st.uuid);
  }

  /** Every nexus of a node as just listed: tracked nexuses of that node not listed are gone. */
  observeNode(node: string, list: NexusState[]): void {
    for (const st of list) {
      this.nodeOf.set(st.uuid, node);
      this.observe(st);
    }
    const listed = new Set(list.map((n) => n.uuid));
    for (const [nexus, at] of this.nodeOf) {
      if (at === node && !listed.has(nexus)) {
        this.stopAll(nexus);
        this.nodeOf.delete(nexus);
      }
    }
  }

  /** The nexus was destroyed: running jobs stop, its history goes with it. */
  forget(nexus: string): void {
    this.stopAll(nexus);
    this.records.delete(nexus);
    this.nodeOf.delete(nexus);
  }

  private stopAll(nexus: string): void {
    const now = new Date().toISOString();
    for (const [uri, job] of this.running.get(nexus) ?? []) this.finish(nexus, uri, job, 'Stopped', now);
    this.running.delete(nexus);
  }

  private finish(
    nexus: string,
    childUri: string,
    job: Running,
    state: RebuildRecord['rebuildJobState'],
    endTime: string,
  ): void {
    this.running.get(nexus)?.delete(childUri);
    const total = Math.ceil(job.size / BLOCK_SIZE);
    const recovered = state === 'Completed' ? total : Math.floor((total * job.percent) / 100);
    const list = this.records.get(nexus) ?? [];
    list.push({
      childUri,
      srcUri: job.srcUri,
      rebuildJobState: state,
      blocksTotal: total,
      blocksRecovered: recovered,
      blocksTransferred: recovered,
      blocksRemaining: total - recovered,
      blockSize: BLOCK_SIZE,
      isPartial: false,
      startTime: job.startTime,
      endTime,
    });
    if (list.length > MAX_RECORDS_PER_NEXUS) list.splice(0, list.length - MAX_RECORDS_PER_NEXUS);
    // Re-insert so the map iterates least recently updated first; the oldest nexus goes past the cap.
    this.records.delete(nexus);
    this.records.set(nexus, list);
    if (this.records.size > MAX_NEXUSES) this.records.delete(this.records.keys().next().value!);
  }
}

/**
 * Wrap an engine factory so every nexus state an io-engine returns passes through `history`. A
 * Proxy, so EngineApi methods added later pass through untouched.
 */
export function observeRebuilds(factory: EngineFactory, history: RebuildHistory): EngineFactory {
  return (nodeId, endpoint) => {
    const api = factory(nodeId, endpoint);
    const seen = (st: NexusState) => {
      history.observe(st);
      return st;
    };
    const wrapped: Partial<EngineApi> = {
      listNexuses: async () => {
        const list = await api.listNexuses();
        history.observeNode(nodeId, list);
        return list;
      },
      getNexus: async (uuid) => seen(await api.getNexus(uuid)),
      createNexus: async (n) => seen(await api.createNexus(n)),
      addChild: async (nexus, uri) => seen(await api.addChild(nexus, uri)),
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
