import type { Logger } from '../../lib/logger.js';
import { type NodeSpec, nodeSpec } from '../../lib/specs/node.js';
import { type KeySpace, nodeLivenessKey, objectKey } from '../../lib/store/keys.js';
import type { Lease, Store } from '../../lib/store/types.js';

/** A NodeSpec write that keeps losing the race to core is retried this often before start fails. */
const REGISTER_ATTEMPTS = 100;

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

  /**
   * Compare-and-swap on the key's mod revision: core writes cordon, drain and labels into the same
   * NodeSpec, so a write that lost the race re-reads and applies the endpoint again (with a short
   * random backoff) instead of overwriting core's fields. Decoded and encoded by the NodeSpec codec,
   * so the fields core (or Mayastor) stored survive byte for byte.
   */
  private async registerNode(): Promise<void> {
    const key = objectKey(this.space, 'NodeSpec', this.record.node);
    for (let attempt = 0; attempt < REGISTER_ATTEMPTS; attempt++) {
      const kv = await this.store.get(key);
      if (!kv) {
        // Mayastor's minimal NodeSpec (empty labels and draining volumes are left out).
        const value = nodeSpec.encode({
          id: this.record.node,
          endpoint: this.record.grpcEndpoint,
          labels: {},
          draining_volumes: [],
        });
        const r = await this.store.txn({
          compare: [{ key, target: 'create', op: '==', value: 0 }],
          success: [{ type: 'put', key, value }],
        });
        if (r.succeeded) return;
      } else {
        let spec: NodeSpec;
        try {
          spec = nodeSpec.decode(key, kv.value);
        } catch (err) {
          this.log.warn({ key, err: (err as Error).message }, 'NodeSpec is not valid; leaving it alone');
          return;
        }
        if (spec.endpoint === this.record.grpcEndpoint) return;
        spec.endpoint = this.record.grpcEndpoint;
        const r = await this.store.txn({
          compare: [{ key, target: 'mod', op: '==', value: kv.modRevision }],
          success: [{ type: 'put', key, value: nodeSpec.encode(spec) }],
        });
        if (r.succeeded) return;
      }
      await new Promise((r) => setTimeout(r, Math.min(5 * 2 ** Math.min(attempt, 5), 100) * Math.random()));
    }
    throw new Error(
      `cannot register NodeSpec of node '${this.record.node}': ${REGISTER_ATTEMPTS} concurrent updates in a row`,
    );
  }

  private async keepAlive(): Promise<void> {
    const lease = await this.store.grantLease(this.ttlSeconds);
    this.lease = lease;
    const onLost = () => {
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
    };
    // Listen before writing: a lease lost while the write is still blocked (a store outage longer
    // than the TTL) must lead to a new registration too, and an abort fires only once.
    lease.lost.addEventListener('abort', onLost, { once: true });
    try {
      await lease.put(nodeLivenessKey(this.space, this.record.node), JSON.stringify(this.record));
    } catch (err) {
      if (lease.lost.aborted) return; // onLost re-registers
      lease.lost.removeEventListener('abort', onLost);
      lease.release();
      throw err;
    }
  }

  /** Revoke the lease: the liveness key disappears at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.lease?.revoke().catch(() => {});
  }
}
