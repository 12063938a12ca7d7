import { StoreFullError } from '../../lib/errors.js';
import type { Compare, Store, TxnOp } from '../../lib/store/types.js';
import type { LeaseLock } from './lease-lock.js';
import { SvcError } from './svc-error.js';

interface Pending {
  ops: TxnOp[];
  /** Writes with prefix deletes go alone (a prefix may cover keys another write puts). */
  alone: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** etcd's default --max-txn-ops is 128; a merged transaction stays below it. */
const MAX_OPS = 120;

/** Details of a store write that failed without an answer: whether it landed is unknown. */
const STORE_ERROR = 'Store error';

/** Details of a store write the store refused for want of space: nothing of it was applied. */
export const STORE_FULL = 'StoreFull';

/**
 * The 507 for a store write that failed: refused by a full store (nothing applied), or not
 * answered (it may still land: etcd applies it later).
 */
export const storeWriteFailed = (err: Error) =>
  err instanceof StoreFullError
    ? new SvcError('FailedPersist', `store write refused: ${err.message}`, STORE_FULL)
    : new SvcError('FailedPersist', `store write failed: ${err.message}`, STORE_ERROR);

/** Whether `err` is such a write (storeWriteFailed), not a refusal such as a lost lease. */
export const isUnansweredWrite = (err: unknown) =>
  err instanceof SvcError && err.kind === 'FailedPersist' && err.details === STORE_ERROR;

/**
 * The only way core writes: transactions guarded on the core lease (`Compare(lease(lock) ==
 * ours)`, docs/mayastor-compat.md §1.4). A failed guard means another core took over: `onLeaseLost` fires and the
 * write fails with FailedPersist (507), never silently.
 *
 * Group commit: writes requested while a transaction is in flight are merged into the next one (in
 * request order, the last write of a key wins), so concurrent operations share store round trips.
 * Each caller still gets its write's outcome: all of a merged transaction commit or none do.
 */
export class GuardedWriter {
  /** Transactions committed since start. */
  writes = 0;
  /** Writes requested since start (each would be one transaction without group commit). */
  requested = 0;
  private lostNotified = false;
  private queue: Pending[] = [];
  private flushing = false;

  constructor(
    private readonly store: Store,
    private readonly lock: LeaseLock,
    private readonly onLeaseLost: (why: string) => void,
  ) {}

  get leaseLost(): boolean {
    return this.lock.lost.aborted || this.lostNotified;
  }

  /** The compare every core write carries: for writes that add their own compare-and-swap guard. */
  get leaseGuard(): Compare {
    return { key: this.lock.lockKey, target: 'lease', op: '==', value: this.lock.lease.id };
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

  write(
    puts: { key: string; value: unknown }[],
    deletes: string[] = [],
    deletePrefixes: string[] = [],
  ): Promise<void> {
    if (this.leaseLost)
      return Promise.reject(new SvcError('FailedPersist', 'core lost its store lease; it no longer writes'));
    const ops: TxnOp[] = [
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
    if (ops.length === 0) return Promise.resolve();
    this.requested++;
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ops, alone: deletePrefixes.length > 0 || ops.length > MAX_OPS, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // Two loop turns: writes from the I/O that arrived meanwhile join the same transaction.
        setImmediate(() => setImmediate(() => void this.flush()));
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      const batch: Pending[] = [this.queue.shift()!];
      let count = batch[0].ops.length;
      while (
        !batch[0].alone &&
        this.queue.length &&
        !this.queue[0].alone &&
        count + this.queue[0].ops.length <= MAX_OPS
      ) {
        const next = this.queue.shift()!;
        count += next.ops.length;
        batch.push(next);
      }
      // Last write of a key wins (etcd refuses a key twice in one transaction).
      const byKey = new Map<string, TxnOp>();
      const prefixes: TxnOp[] = [];
      for (const p of batch) {
        for (const op of p.ops) {
          if (op.type === 'deletePrefix') prefixes.push(op);
          else {
            byKey.delete(op.key);
            byKey.set(op.key, op);
          }
        }
      }
      try {
        await this.commit([...byKey.values(), ...prefixes]);
        for (const p of batch) p.resolve();
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    this.flushing = false;
  }

  private async commit(success: TxnOp[]): Promise<void> {
    if (this.leaseLost) throw new SvcError('FailedPersist', 'core lost its store lease; it no longer writes');
    let res: Awaited<ReturnType<Store['txn']>>;
    try {
      res = await this.store.txn({
        compare: [{ key: this.lock.lockKey, target: 'lease', op: '==', value: this.lock.lease.id }],
        success,
      });
    } catch (err) {
      throw storeWriteFailed(err as Error);
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
