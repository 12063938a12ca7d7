import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import type { Store } from '../../../src/lib/store/types.js';
import { registerElectionContract } from './contract-election.js';
import { registerKvContract } from './contract-kv.js';
import { registerLeaseContract } from './contract-leases.js';
import { registerProcessContract } from './contract-processes.js';
import { registerWatchContract } from './contract-watch.js';

/** How the contract suite reaches one backend. */
export interface StoreBackendHarness {
  name: 'etcd' | 'embedded';
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** A new, independent client of the same store. */
  open(): Promise<Store>;
  /** The --store URL other processes use. */
  url(): string;
  /** Break live clients' connections while they keep running (etcd: restart the server). */
  restartServer?: () => Promise<void>;
}

/** What every contract section gets: fresh clients (closed after each test) and unique key prefixes. */
export interface ContractContext {
  harness: StoreBackendHarness;
  open(): Promise<Store>;
  prefix(): string;
}

let counter = 0;

/** Register the whole store contract against one backend; run unchanged for etcd and embedded. */
export function registerStoreContract(harness: StoreBackendHarness): void {
  const opened: Store[] = [];
  const ctx: ContractContext = {
    harness,
    async open() {
      const s = await harness.open();
      opened.push(s);
      return s;
    },
    prefix: () => `contract/${process.pid}-${Date.now().toString(36)}-${counter++}/`,
  };

  describe(`store contract (${harness.name})`, () => {
    beforeAll(() => harness.setup());
    afterAll(() => harness.teardown());
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close().catch(() => undefined);
    });
    registerKvContract(ctx);
    registerLeaseContract(ctx);
    registerWatchContract(ctx);
    registerElectionContract(ctx);
    registerProcessContract(ctx);
  });
}
