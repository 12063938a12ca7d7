import type { Store, TxnOp } from '../../lib/store/types.js';
import type { LeaseLock } from './lease-lock.js';
import { SvcError } from './svc-error.js';

/**
 * The only way core writes: one transaction guarded on the core lease (`Compare(lease(lock) ==
 * ours)`, reference §1.4). A failed guard means another core took over: `onLeaseLost` fires and the
 * write fails with FailedPersist (507), never silently.
 */
export class GuardedWriter {
  /** Transactions committed since start (the bench reports writes per create from it). */
  writes = 0;
  private lostNotified = false;

  constructor(
    private readonly store: Store,
    private readonly lock: LeaseLock,
    private readonly onLeaseLost: (why: string) => void,
  ) {}

  get leaseLost(): boolean {
    return this.lock.lost.aborted || this.lostNotified;
  }

  /** Check that the lock key still carries our lease (another core may have broken the lock). */
  async verify(): Promise<void> {
    if (this.leaseLost) return;
    const kv = await this.store.get(this.lock.lockKey);
    if (!kv || kv.lease !== this.lock.lease.id) {
      this.lostNotified = true;
      this.onLeaseLost(`lock key ${this.lock.lockKey} no longer carries lease ${this.lock.lease.id}`);
    }
  }

  async write(
    puts: { key: string; value: unknown }[],
    deletes: string[] = [],
    deletePrefixes: string[] = [],
  ): Promise<void> {
    if (this.leaseLost) throw new SvcError('FailedPersist', 'core lost its store lease; it no longer writes');
    const success: TxnOp[] = [
      ...puts.map(
        (p): TxnOp => ({
          type: 'put',
          key: p.key,
          value: typeof p.value === 'string' ? p.value : JSON.stringify(p.value),
        }),
      ),
      ...deletes.map((key): TxnOp => ({ type: 'delete', key })),
      ...deletePrefixes.map((prefix): TxnOp => ({ type: 'deletePrefix', prefix })),
    ];
    if (success.length === 0) return;
    let res: Awaited<ReturnType<Store['txn']>>;
    try {
      res = await this.store.txn({
        compare: [{ key: this.lock.lockKey, target: 'lease', op: '==', value: this.lock.lease.id }],
        success,
      });
    } catch (err) {
      throw new SvcError('FailedPersist', `store write failed: ${(err as Error).message}`, 'Store error');
    }
    if (!res.succeeded) {
      if (!this.lostNotified) {
        this.lostNotified = true;
        this.onLeaseLost(`store txn compare on ${this.lock.lockKey} failed`);
      }
      throw new SvcError(
        'FailedPersist',
        'core lost its store lease (another core took over); write refused',
        'FailedLock',
      );
    }
    this.writes++;
  }
}
