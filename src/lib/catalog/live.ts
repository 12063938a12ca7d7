import { ServiceUnavailableError, TimeoutError } from '../errors.js';
import { RestClient } from '../rest/client.js';
import { readEndpoints } from '../rest/endpoint.js';

/** What core knows beyond the store, joined to `get` tables when core answers. */
export interface LiveState {
  /** Pool id → capacity and bytes used, as its io-engine last reported them. */
  pools: Map<string, { capacity: number; used: number }>;
  /** Volume id → health and the target URI clients connect to (absent when unpublished). */
  volumes: Map<string, { status: string; targetUri: string | null }>;
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
  const up = readEndpoints();
  return up?.store === storeUrl ? (up.rest ?? null) : null;
}

/** What a view needs of core's live state: each kind is one listing asked of core. */
export type LiveKind = 'pools' | 'volumes';

/**
 * Core's live state of the kinds asked for (the others stay empty), or null when core does not
 * answer within 2 s.
 */
export async function readLive(restUrl: string, kinds: readonly LiveKind[]): Promise<LiveState | null> {
  const client = new RestClient(restUrl, { timeoutMs: 2_000 });
  try {
    const [pools, volumes] = await Promise.all([
      kinds.includes('pools') ? client.listPools() : [],
      kinds.includes('volumes') ? client.listVolumes() : [],
    ]);
    const nexuses = new Map<string, string>();
    for (const v of volumes)
      if (v.state.target?.deviceUri) nexuses.set(v.state.target.uuid, v.state.target.deviceUri);
    return {
      nexuses,
      pools: new Map(
        pools.flatMap((p) => (p.state ? [[p.id, { capacity: p.state.capacity, used: p.state.used }]] : [])),
      ),
      volumes: new Map(
        volumes.map((v) => [
          v.spec.uuid,
          { status: v.state.status, targetUri: v.state.target?.deviceUri || null },
        ]),
      ),
    };
  } catch (err) {
    if (err instanceof ServiceUnavailableError || err instanceof TimeoutError) return null;
    throw err;
  } finally {
    await client.close();
  }
}
