import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreFullError } from '../../../src/lib/errors.js';
import { registry } from '../../../src/lib/metrics/registry.js';
import { meterStore } from '../../../src/lib/metrics/store.js';
import { EmbeddedStore } from '../../../src/lib/store/embedded.js';

/**
 * The embedded store on a disk that fills up (a 4 MiB tmpfs of the test's own): a write that does
 * not fit is refused as the store being full, with nothing of it applied; what was stored before
 * still reads; once space is freed the same store takes writes again, without being reopened.
 */
describe('the embedded store on a full disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-full-'));
  beforeAll(() => {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'storctl-test-full-disk', dir]);
  });
  afterAll(() => {
    execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a write that does not fit as full, keeps what it had, and writes again once there is room', async () => {
    // Room the test frees later, as an operator deleting a log would.
    const filler = join(dir, 'filler');
    writeFileSync(filler, Buffer.alloc(1 << 20));
    const store = meterStore(EmbeddedStore.open(join(dir, 'store.db')));
    try {
      const value = 'v'.repeat(64 << 10);
      let stored = 0;
      let refused: unknown;
      while (!refused && stored < 200)
        await store.put(`/k/${String(stored).padStart(4, '0')}`, value).then(
          () => stored++,
          (err) => {
            refused = err;
          },
        );
      expect(refused).toBeInstanceOf(StoreFullError);
      expect((refused as StoreFullError).message).toBe(
        `store sqlite:${join(dir, 'store.db')} is full: database or disk is full; nothing was written`,
      );
      expect((refused as StoreFullError).exitCode).toBe(5);
      expect((refused as StoreFullError).suggestions).toEqual([
        `free space on the disk that holds ${join(dir, 'store.db')} (\`df -h\`), then retry`,
      ]);
      expect(stored).toBeGreaterThan(10);
      // A daemon's metrics count it apart from other errors, for an alert.
      expect(await registry.getSingleMetricAsString('storctl_store_txn_duration_seconds')).toMatch(
        /^storctl_store_txn_duration_seconds_count\{backend="embedded",op="put",outcome="full"\} 1$/m,
      );
      // Nothing of the refused write; everything before it.
      const { kvs } = await store.range('/k/');
      expect(kvs.length).toBe(stored);
      expect(await store.get(`/k/${String(stored).padStart(4, '0')}`)).toBeNull();

      rmSync(filler);
      await store.put('/k/after', 'room again');
      expect((await store.get('/k/after'))?.value).toBe('room again');
    } finally {
      await store.close();
    }
  });
});
