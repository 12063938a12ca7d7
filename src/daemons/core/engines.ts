import type { EngineApi } from './engine-api.js';
import type { Registry } from './registry.js';
import { notFound, SvcError } from './svc-error.js';

export type EngineFactory = (nodeId: string, grpcEndpoint: string) => EngineApi;

/** EngineApi calls that change what a pool holds or has free: its state is re-read after each. */
const POOL_CHANGING = new Set<string | symbol>([
  'createReplica',
  'destroyReplica',
  'resizeReplica',
  'createReplicaSnapshot',
  'destroyReplicaSnapshot',
  'createSnapshotClone',
]);

/** How long a replaced io-engine client stays usable by the operations that still hold it. */
export const RETIRED_CLIENT_GRACE_MS = 60_000;

/** One gRPC client per online io-engine, made from the endpoint its liveness key advertises. */
export class Engines {
  private clients = new Map<string, { endpoint: string; startedAt: string | null; api: EngineApi }>();

  constructor(
    private readonly registry: Registry,
    private readonly factory: EngineFactory,
  ) {}

  /** The io-engine of `node`; Unavailable (503) when the node is not online. */
  get(node: string): EngineApi {
    const live = this.registry.nodeLive.get(node);
    // A node no io-engine ever registered as does not exist (404), rather than being offline (503).
    if (!live && !this.registry.nodes.has(node)) throw notFound('node', node);
    if (!live?.online || !live.grpcEndpoint) {
      throw new SvcError('Unavailable', `io-engine node '${node}' is not online`, `NodeNotOnline: ${node}`);
    }
    // A restarted io-engine gets a new client even at the same endpoint: the old one's channel may
    // be backing off from the calls that failed while the process was gone.
    const have = this.clients.get(node);
    if (have && have.endpoint === live.grpcEndpoint && have.startedAt === live.startedAt) return have.api;
    // Closed later, not now: an operation holding the old client between its calls (a create's
    // replicas, a nexus's children) would get "Channel has been shut down" for its next one.
    if (have) setTimeout(() => have.api.close(), RETIRED_CLIENT_GRACE_MS).unref();
    const api = this.withPoolRefresh(node, this.factory(node, live.grpcEndpoint));
    this.clients.set(node, { endpoint: live.grpcEndpoint, startedAt: live.startedAt, api });
    return api;
  }

  /**
   * `api`, re-reading the node's pool state after every call that changes a pool's content, so that
   * what `get pools`, CSI GetCapacity and replica placement read follows an operation at once
   * instead of at the next poll (--cache-period, 30 s).
   */
  private withPoolRefresh(node: string, api: EngineApi): EngineApi {
    return new Proxy(api, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function' || !POOL_CHANGING.has(prop)) return value;
        return async (...args: unknown[]) => {
          try {
            return await value.apply(target, args);
          } finally {
            this.refreshPools(node, target);
          }
        };
      },
    });
  }

  /** Nodes whose pool state is being re-read, and those to re-read once more after that. */
  private readonly refreshing = new Set<string>();
  private readonly refreshAgain = new Set<string>();

  private refreshPools(node: string, api: EngineApi): void {
    if (this.refreshing.has(node)) {
      this.refreshAgain.add(node);
      return;
    }
    this.refreshing.add(node);
    void api
      .listPools()
      .then((pools) => {
        for (const p of pools) this.registry.poolStates.set(p.id, p);
      })
      .catch(() => {}) // the next poll reads it
      .finally(() => {
        this.refreshing.delete(node);
        if (this.refreshAgain.delete(node)) this.refreshPools(node, api);
      });
  }

  /** The io-engine of `node`, or null when it is offline. */
  tryGet(node: string): EngineApi | null {
    try {
      return this.get(node);
    } catch {
      return null;
    }
  }

  close(): void {
    for (const c of this.clients.values()) c.api.close();
    this.clients.clear();
  }
}
