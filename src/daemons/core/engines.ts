import type { EngineApi } from './engine-api.js';
import type { Registry } from './registry.js';
import { notFound, SvcError } from './svc-error.js';

export type EngineFactory = (nodeId: string, grpcEndpoint: string) => EngineApi;

/** One gRPC client per online io-engine, made from the endpoint its liveness key advertises. */
export class Engines {
  private clients = new Map<string, { endpoint: string; api: EngineApi }>();

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
    const have = this.clients.get(node);
    if (have && have.endpoint === live.grpcEndpoint) return have.api;
    have?.api.close();
    const api = this.factory(node, live.grpcEndpoint);
    this.clients.set(node, { endpoint: live.grpcEndpoint, api });
    return api;
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
