import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/lib/errors.js';
import { storeLeaseOwner } from '../../../src/lib/specs/index.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { KeyValue } from '../../../src/lib/store/types.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { runStorctl } from '../../helpers/storctl.js';
import { withValue } from '../../unit/specs/edit.js';
import { ids, volumeReference } from '../../unit/specs/fixtures.js';
import { type Backend, FAST_CORE_FLAGS } from './cluster.js';

/** Every key of the store with its value and revisions: what a run that writes nothing leaves as is. */
async function everything(storeUrl: string): Promise<KeyValue[]> {
  const store = await openStore(storeUrl);
  try {
    return (await store.range('/')).kvs;
  } finally {
    await store.close();
  }
}

for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core refuses to start on a store holding a value it cannot decode (${backend})`, () => {
    let dir: string;
    let etcd: EtcdServer | null = null;
    let storeUrl: string;
    const space = { clusterId: `decode-${Date.now().toString(36)}`, namespace: 'default' };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'storctl-core-decode-'));
      storeUrl = `sqlite:${join(dir, 'store.db')}`;
      if (backend === 'etcd') {
        etcd = await startEtcd();
        storeUrl = etcd.url;
      }
    });
    afterAll(async () => {
      await etcd?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('exits with the DecodeError naming the key and the field, and writes nothing but the lease owner', async () => {
      const goodKey = objectKey(space, 'VolumeSpec', ids.volume);
      const badKey = objectKey(space, 'VolumeSpec', ids.volume2);
      const store = await openStore(storeUrl);
      try {
        await store.put(goodKey, volumeReference);
        // A VolumeSpec whose replica count is text: serde (and storctl's codec) want a u8.
        await store.put(
          badKey,
          withValue(withValue(volumeReference, ['uuid'], ids.volume2), ['num_replicas'], 'two'),
        );
      } finally {
        await store.close();
      }
      const before = await everything(storeUrl);
      expect(before.map((kv) => kv.key)).toEqual([goodKey, badKey].sort());

      const r = await runStorctl(['daemon', 'core', '--rest', '127.0.0.1:0', ...FAST_CORE_FLAGS], {
        env: { STORCTL_STORE: storeUrl, STORCTL_CLUSTER_ID: space.clusterId, STORCTL_LOG_LEVEL: 'info' },
      });
      expect(r.code, r.stderr).toBe(ExitCode.corrupt);
      expect(r.stderr).toContain(`cannot decode ${badKey}: field 'num_replicas' expected`);
      expect(r.stderr).toContain('got "two"');
      expect(r.stdout).not.toContain('core ready');
      // Taking the lease records its owner before anything is loaded, as upstream's core does
      // (docs/mayastor-compat.md §1.4). That is the only write: no spec rewritten, no event, no
      // lease lock left behind; every other key is as it was, revisions included.
      const owner = objectKey(space, 'StoreLeaseOwner', 'CoreAgent');
      const after = await everything(storeUrl);
      expect(after.filter((kv) => kv.key !== owner)).toEqual(before);
      expect(after.map((kv) => kv.key)).toEqual([goodKey, badKey, owner].sort());
      expect(storeLeaseOwner.decode(owner, after.find((kv) => kv.key === owner)!.value)).toMatchObject({
        kind: 'CoreAgent',
      });
    });
  });
}
