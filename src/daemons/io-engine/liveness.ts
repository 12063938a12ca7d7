import type { Logger } from '../../lib/logger.js';
import { clusterPrefix, type KeySpace, objectKey } from '../../lib/store/keys.js';
import type { Lease, Store } from '../../lib/store/types.js';

/** Key of a node's lease-bound liveness record: present exactly while the io-engine is alive. */
export function nodeLivenessKey(space: KeySpace, nodeId: string): string {
  return `${clusterPrefix(space)}/storctl/NodeLiveness/${nodeId}`;
}

export interface LivenessRecord {
  node: string;
  grpcEndpoint: string;
  nbdEndpoint: string;
  startedAt: string;
  version: string;
}

/**
 * Register the node (a NodeSpec-compatible record, written only when absent or when the endpoint
 * changed, other fields preserved) and keep a liveness key bound to a lease whose TTL is the
 * heartbeat deadline. A lost lease (store outage longer than the TTL) is re-granted.
 */
export class Liveness {
  private lease: Lease | null = null;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly space: KeySpace,
    private readonly record: LivenessRecord,
    private readonly ttlSeconds: number,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.registerNode();
    await this.keepAlive();
  }

  private async registerNode(): Promise<void> {
    const key = objectKey(this.space, 'NodeSpec', this.record.node);
    for (let attempt = 0; attempt < 5; attempt++) {
      const kv = await this.store.get(key);
      if (!kv) {
        const value = JSON.stringify({
          id: this.record.node,
          endpoint: this.record.grpcEndpoint,
          labels: {},
        });
        const r = await this.store.txn({
          compare: [{ key, target: 'create', op: '==', value: 0 }],
          success: [{ type: 'put', key, value }],
        });
        if (r.succeeded) return;
        continue;
      }
      let spec: Record<string, unknown>;
      try {
        spec = JSON.parse(kv.value) as Record<string, unknown>;
      } catch {
        this.log.warn({ key }, 'NodeSpec is not JSON; leaving it alone');
        return;
      }
      if (spec.endpoint === this.record.grpcEndpoint) return;
      spec.endpoint = this.record.grpcEndpoint;
      const r = await this.store.txn({
        compare: [{ key, target: 'mod', op: '==', value: kv.modRevision }],
        success: [{ type: 'put', key, value: JSON.stringify(spec) }],
      });
      if (r.succeeded) return;
    }
    throw new Error(`cannot register NodeSpec of node '${this.record.node}': concurrent updates`);
  }

  private async keepAlive(): Promise<void> {
    const lease = await this.store.grantLease(this.ttlSeconds);
    this.lease = lease;
    await lease.put(nodeLivenessKey(this.space, this.record.node), JSON.stringify(this.record));
    lease.lost.addEventListener('abort', () => {
      if (this.stopped) return;
      this.log.warn({ node: this.record.node }, 'liveness lease lost; re-registering');
      const retry = () => {
        if (this.stopped) return;
        this.keepAlive().catch((err) => {
          this.log.error({ err: String(err) }, 'liveness re-registration failed');
          setTimeout(retry, 1000).unref();
        });
      };
      retry();
    });
  }

  /** Revoke the lease: the liveness key disappears at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.lease?.revoke().catch(() => {});
  }
}
