import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';

export interface StoreSelection {
  storeUrl: string;
  tls: { ca?: string; cert?: string; key?: string };
}

/**
 * Open the selected store for the duration of `fn`, and close it whatever happens. An embedded
 * store must exist unless `create` (a command that only reads never makes an empty one).
 */
export async function withStore<T>(
  selection: StoreSelection,
  fn: (store: Store) => Promise<T>,
  { create = false }: { create?: boolean } = {},
): Promise<T> {
  const store = await openStore(selection.storeUrl, { tls: selection.tls, existing: !create });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
