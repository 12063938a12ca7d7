import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dumpStore } from '../../src/lib/catalog/dump.js';
import { applyLoad, planLoad } from '../../src/lib/catalog/load.js';
import { decodeRecord } from '../../src/lib/specs/index.js';
import { type KeySpace, parseKey } from '../../src/lib/store/keys.js';
import { openStore } from '../../src/lib/store/open.js';

/**
 * What every daemon test ends with: everything the daemons wrote under `space` decodes through the
 * spec codecs (storctl's own `storctl/…` records are JSON), and `store dump` → `store load` into a
 * fresh store → `store dump` gives back every key with the same value. So a value nobody can read, or
 * a cluster whose backup cannot be restored, fails the test that made it. Returns how many keys were
 * checked (a test may assert it is not zero).
 */
export async function checkStoreReadable(storeUrl: string, space: KeySpace): Promise<number> {
  const lines: string[] = [];
  const store = await openStore(storeUrl);
  try {
    await dumpStore(store, space, (l) => lines.push(l));
  } finally {
    await store.close();
  }
  const kept = new Map<string, string>();
  for (const line of lines) {
    const rec = JSON.parse(line) as { key: string; value: string; lease: string };
    const type = parseKey(rec.key)?.type;
    if (type === 'storctl') JSON.parse(rec.value);
    else if (!decodeRecord(rec.key, rec.value))
      throw new Error(`${rec.key}: a daemon wrote a record type storctl has no codec for`);
    // Lease-bound keys (liveness, locks) belong to live processes: `store load` skips them.
    if (rec.lease === '0') kept.set(rec.key, rec.value);
  }
  const plan = planLoad(lines.join('\n'), space);
  const dir = mkdtempSync(join(tmpdir(), 'storctl-roundtrip-'));
  const copy = await openStore(`sqlite:${join(dir, 'store.db')}`);
  try {
    await applyLoad(copy, plan);
    const again = new Map<string, string>();
    await dumpStore(copy, space, (l) => {
      const rec = JSON.parse(l) as { key: string; value: string };
      again.set(rec.key, rec.value);
    });
    for (const [key, value] of kept) {
      if (again.get(key) !== value) throw new Error(`${key}: dump → load → dump changed or lost the value`);
    }
    if (again.size !== kept.size)
      throw new Error(`dump → load → dump: ${again.size} keys, expected ${kept.size}`);
  } finally {
    await copy.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return lines.length;
}
