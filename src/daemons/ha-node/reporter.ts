import { status } from '@grpc/grpc-js';
import type { FailedPath, HaClusterClient } from '../../lib/ha/clients.js';
import type { Logger } from '../../lib/logger.js';

/** Answers after which a path is never sent again (docs/mayastor-compat.md §3.3). */
const SETTLED = new Set<number>([
  status.OK,
  status.ALREADY_EXISTS,
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.FAILED_PRECONDITION,
]);

/**
 * Sends failed paths to the active cluster agent: batched (a path failing within `aggregateMs` of
 * another goes in the same report), resent every `retransmitMs` until the cluster agent settles
 * each one. Registers the node first, and again whenever a cluster agent stopped answering (a
 * restarted or new active one does not know this node).
 */
export class Reporter {
  private readonly pending = new Map<string, FailedPath>();
  private registered = false;
  private timer: NodeJS.Timeout | null = null;
  private sending = false;
  private current = 0;
  private stopped = false;

  constructor(
    private readonly o: {
      node: string;
      endpoint: () => string;
      clusters: HaClusterClient[];
      aggregateMs: number;
      retransmitMs: number;
      log: Logger;
    },
  ) {}

  add(path: FailedPath): void {
    this.pending.set(path.volume_id, path);
    // A new failure goes out within aggregateMs, not at the next retransmission.
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.schedule(this.o.aggregateMs);
  }

  private schedule(ms: number): void {
    if (this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.send();
    }, ms);
  }

  /** Register with a cluster agent (at start, and periodically: a restarted one forgot us). */
  async register(): Promise<boolean> {
    for (let i = 0; i < this.o.clusters.length; i++) {
      const c = this.o.clusters[(this.current + i) % this.o.clusters.length];
      try {
        await c.register(this.o.node, this.o.endpoint());
        this.current = (this.current + i) % this.o.clusters.length;
        if (!this.registered) this.o.log.info({ cluster: c.endpoint }, 'registered with ha-cluster');
        this.registered = true;
        return true;
      } catch (err) {
        this.o.log.debug(
          { cluster: c.endpoint, err: (err as Error).message },
          'ha-cluster did not take the registration',
        );
      }
    }
    this.registered = false;
    return false;
  }

  private async send(): Promise<void> {
    if (this.sending || this.pending.size === 0) return;
    this.sending = true;
    try {
      if (!this.registered) await this.register();
      const batch = [...this.pending.values()];
      for (let i = 0; i < this.o.clusters.length; i++) {
        const c = this.o.clusters[(this.current + i) % this.o.clusters.length];
        try {
          const { statuses } = await c.report(this.o.node, this.o.endpoint(), batch);
          this.current = (this.current + i) % this.o.clusters.length;
          const answered = new Map(statuses.map((s) => [s.volume_id, s]));
          for (const p of batch) {
            const s = answered.get(p.volume_id);
            if (!s || SETTLED.has(s.status_code)) {
              if (this.pending.get(p.volume_id) === p) this.pending.delete(p.volume_id);
            } else
              this.o.log.warn(
                { volumeId: p.volume_id, code: s.status_code, msg: s.message },
                'failed path not taken; resending',
              );
          }
          this.o.log.info(
            { cluster: c.endpoint, paths: batch.map((p) => p.volume_id) },
            'reported failed paths',
          );
          break;
        } catch (err) {
          this.registered = false;
          this.o.log.warn(
            { cluster: c.endpoint, err: (err as Error).message },
            'ha-cluster did not take the report',
          );
        }
      }
    } finally {
      this.sending = false;
      if (this.pending.size > 0) this.schedule(this.o.retransmitMs);
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
