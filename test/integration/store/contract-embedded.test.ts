import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../../src/lib/store/open.js';
import { registerStoreContract } from './contract.js';

let dir = '';

registerStoreContract({
  name: 'embedded',
  async setup() {
    dir = mkdtempSync(join(tmpdir(), 'storctl-embedded-'));
  },
  async teardown() {
    rmSync(dir, { recursive: true, force: true });
  },
  open: () => openStore(`sqlite:${join(dir, 'store', 'store.db')}`),
  url: () => `sqlite:${join(dir, 'store', 'store.db')}`,
});
