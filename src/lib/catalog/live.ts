import { eachLimited } from '../each-limited.js';
import { ServiceUnavailableError, TimeoutError } from '../errors.js';
import { RestClient } from '../rest/client.js';
import { readEndpoints } from '../rest/endpoint.js';
import { OtherClusterError, RestError } from '../rest/errors.js';
import type { Pool, Volume, VolumeSnapshot } from '../rest/types.js';
import { streamObjects } from './stream.js';

/** What core knows beyond the store, joined to `get` listings when core answers: its REST objects. */
export interface LiveState {
  /** Volume id → core's volume (its `state`: health, target URI, replica usage). */
  volumes: Map<string, Volume>;
  /** Pool id → core's pool (its `state`: capacity and bytes used, as its io-engine last reported them). */
  pools: Map<string, Pool>;
  /** Snapshot id → core's snapshot (its `state`: readiness and each replica snapshot's node). */
  snapshots: Map<string, VolumeSnapshot>;
  /** Target nexus id → the URI it is served at. */
  nexuses: Map<string, string>;
}

/**
 * Core's REST URL for live state, only where it is known to serve the cluster being read: the
 * STORCTL_REST environment, or the endpoints `storctl up` published for this very store. (A core
 * of another cluster could answer on the default port.)
 */
export function liveRestUrl(storeUrl: string): string | null {
  if (process.env.STORCTL_REST) return process.env.STORCTL_REST;
  // Live state is an extra: a file this user cannot read leaves the view to the store alone.
  const up = (() => {
    try {
      return readEndpoints();
    } catch {
      return null;
    }
  })();
  return up?.store === storeUrl ? (up.rest ?? null) : null;
}

/** What a view needs of core's live state: each kind is one listing asked of core. */
export type LiveKind = 'pools' | 'volumes' | 'snapshots' | 'nexuses';

/** Why core's live state is not joined (said on stderr); `otherCluster`: a setting to fix. */
export interface LiveUnavailable {
  unavailable: string;
  otherCluster?: boolean;
}

/** Core's live state, or why there is none to join. */
export type LiveAnswer = { live: LiveState } | LiveUnavailable;

/** Why core's answer is not joined: unreachable or slow, or a core of another cluster. */
function unavailable(restUrl: string, err: unknown): LiveUnavailable {
  if (err instanceof OtherClusterError) return { unavailable: err.message, otherCluster: true };
  if (err instanceof ServiceUnavailableError || err instanceof TimeoutError)
    return { unavailable: `core is not reachable at ${restUrl}` };
  throw err;
}

/** Past this many volumes asked for by id, one listing of all is cheaper than a request each. */
const VOLUMES_BY_ID = 200;

/** The volumes core knows by these ids (the ones it does not know left out). */
async function someVolumes(client: RestClient, ids: readonly string[]): Promise<Volume[]> {
  if (ids.length > VOLUMES_BY_ID) {
    const wanted = new Set(ids);
    return (await client.listVolumes()).filter((v) => wanted.has(v.spec.uuid));
  }
  const found: Volume[] = [];
  await eachLimited(ids, 8, async (id) => {
    try {
      found.push(await client.getVolume(id));
    } catch (err) {
      if (!(err instanceof RestError && err.kind === 'NotFound')) throw err;
    }
  });
  return found;
}

/**
 * Core's live state of the kinds asked for (the others stay empty), from a core that serves
 * `cluster` (`<cluster-id>/<namespace>`) and answers within 2 s. With `volumeIds`, volumes are
 * those only (a page about one volume or node need not list 100k).
 */
export async function readLive(
  restUrl: string,
  kinds: readonly LiveKind[],
  cluster: string,
  volumeIds?: readonly string[],
): Promise<LiveAnswer> {
  const client = new RestClient(restUrl, { timeoutMs: 2_000, cluster });
  try {
    const [pools, volumes, snapshots, targets] = await Promise.all([
      kinds.includes('pools') ? client.listPools() : [],
      !kinds.includes('volumes') ? [] : volumeIds ? someVolumes(client, volumeIds) : client.listVolumes(),
      kinds.includes('snapshots') ? client.listSnapshotsPage({ maxEntries: 0 }).then((p) => p.entries) : [],
      kinds.includes('nexuses') ? client.listNexuses() : [],
    ]);
    const nexuses = new Map<string, string>();
    for (const v of volumes)
      if (v.state.target?.deviceUri) nexuses.set(v.state.target.uuid, v.state.target.deviceUri);
    for (const n of targets) if (n.deviceUri) nexuses.set(n.uuid, n.deviceUri);
    return {
      live: {
        nexuses,
        pools: new Map(pools.map((p) => [p.id, p])),
        volumes: new Map(volumes.map((v) => [v.spec.uuid, v])),
        snapshots: new Map(snapshots.map((s) => [s.definition.spec.uuid, s])),
      },
    };
  } catch (err) {
    return unavailable(restUrl, err);
  } finally {
    await client.close();
  }
}

/** Volumes asked of core per page of a streamed listing. */
const LIVE_PAGE = 500;

/**
 * All of core's volumes, streamed page by page as `-o json|yaml` prints them; null once printed,
 * or (nothing printed) why not: core did not answer the first page within 2 s, or serves another
 * cluster than `cluster`.
 */
export async function streamLiveVolumes(
  restUrl: string,
  cluster: string,
  format: 'json' | 'yaml',
  write: (text: string) => Promise<void> | void,
): Promise<LiveUnavailable | null> {
  const client = new RestClient(restUrl, { timeoutMs: 2_000, cluster });
  try {
    let page: { entries: Volume[]; next_token?: number };
    try {
      page = await client.listVolumesPage(LIVE_PAGE);
    } catch (err) {
      return unavailable(restUrl, err);
    }
    async function* pages() {
      yield page.entries;
      while (page.next_token !== undefined) {
        page = await client.listVolumesPage(LIVE_PAGE, page.next_token);
        yield page.entries;
      }
    }
    await streamObjects(pages(), format, write);
    return null;
  } finally {
    await client.close();
  }
}
