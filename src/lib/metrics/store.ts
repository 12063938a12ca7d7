import { StoreFullError } from '../errors.js';
import type { Store } from '../store/types.js';
import { storeTxnDuration } from './catalog.js';

/**
 * Time every write of a daemon's store (storctl_store_txn_duration_seconds): guarded transactions
 * (all of core's writes) and plain puts and deletes (an io-engine's NexusInfo), each a transaction
 * of the store. The store itself stays free of metrics code.
 */
export function meterStore<S extends Store>(store: S): S {
  const backend = store.backend;
  // The embedded store's put and delete call its own txn synchronously: counted once, as the put.
  let nested = false;
  const meter =
    <A extends unknown[], R>(op: string, fn: (...args: A) => Promise<R>, ok: (r: R) => boolean) =>
    (...args: A): Promise<R> => {
      if (nested) return fn(...args);
      const end = storeTxnDuration.startTimer({ backend, op });
      nested = true;
      let p: Promise<R>;
      try {
        p = fn(...args);
      } finally {
        nested = false;
      }
      return p.then(
        (r) => {
          end({ outcome: ok(r) ? 'succeeded' : 'failed' });
          return r;
        },
        (err) => {
          // A full store (etcd's NOSPACE) refuses every write until an operator acts: its own outcome.
          end({ outcome: err instanceof StoreFullError ? 'full' : 'error' });
          throw err;
        },
      );
    };
  store.txn = meter('txn', store.txn.bind(store), (r) => r.succeeded);
  store.put = meter('put', store.put.bind(store), () => true);
  store.delete = meter('delete', store.delete.bind(store), () => true);
  return store;
}
