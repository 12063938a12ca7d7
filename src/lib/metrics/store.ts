import type { Store } from '../store/types.js';
import { storeTxnDuration } from './catalog.js';

/**
 * Time every transaction of a daemon's store (storctl_store_txn_duration_seconds). Core writes
 * through guarded transactions only; on the embedded store put and delete are transactions too.
 * The store itself stays free of metrics code.
 */
export function meterStore<S extends Store>(store: S): S {
  const txn = store.txn.bind(store);
  const backend = store.backend;
  store.txn = async (request) => {
    const end = storeTxnDuration.startTimer({ backend });
    try {
      const res = await txn(request);
      end({ outcome: res.succeeded ? 'succeeded' : 'failed' });
      return res;
    } catch (err) {
      end({ outcome: 'error' });
      throw err;
    }
  };
  return store;
}
