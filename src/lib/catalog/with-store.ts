import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';

export interface StoreSelection {
  storeUrl: string;
  tls: { ca?: string; cert?: string; key?: string };
}

/** Open the selected store for the duration of `fn`, and close it whatever happens. */
export async function withStore<T>(selection: StoreSelection, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(selection.storeUrl, { tls: selection.tls });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
