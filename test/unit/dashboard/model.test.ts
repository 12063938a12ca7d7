import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DashboardModel } from '../../../src/lib/dashboard/model.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { waitFor } from '../../helpers/wait.js';
import { seed, smallCluster, space, volumeId, volumeRecords } from './fixture.js';

describe('the dashboard model (real embedded store)', () => {
  let dir: string;
  let store: Store;
  let model: DashboardModel | null = null;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-dash-model-'));
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    await seed(store, smallCluster());
  });
  afterEach(async () => {
    await model?.stop();
    model = null;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('coalesces a burst of writes into a few announcements, and misses none of them', async () => {
    model = new DashboardModel({ store, space, coalesceMs: 150 });
    await model.start();
    let announced = 0;
    model.subscribe(() => announced++);
    const started = Date.now();
    for (let n = 100; n < 160; n++) await seed(store, volumeRecords(n));
    await waitFor(() => model!.getSnapshot().state.specs.VolumeSpec?.size === 63, { what: 'all 63 volumes' });
    const elapsed = Date.now() - started;
    expect(announced).toBeLessThanOrEqual(Math.ceil(elapsed / 150) + 2);
    expect(announced).toBeLessThan(60);
  });

  it('an undecodable value is counted, and forgotten once it is written again validly', async () => {
    model = new DashboardModel({ store, space, coalesceMs: 10 });
    await model.start();
    const key = objectKey(space, 'VolumeSpec', volumeId(1));
    await store.put(key, '{"uuid":"not json enough"}');
    await waitFor(() => model!.getSnapshot().state.errors.length === 1, { what: 'a decode error' });
    expect(model.getSnapshot().state.specs.VolumeSpec?.has(volumeId(1))).toBe(false);
    await seed(store, volumeRecords(1, { replicas: 2, node: 'node-1' }));
    await waitFor(() => model!.getSnapshot().state.errors.length === 0, { what: 'the error forgotten' });
    expect(model.getSnapshot().state.specs.VolumeSpec?.get(volumeId(1))?.num_replicas).toBe(2);
  });

  it("fills the S3 mounts slot from the mounter's state file, and says when there is none", async () => {
    const stateDir = join(dir, 'mounter');
    model = new DashboardModel({ store, space, mounterStateDir: stateDir, coalesceMs: 10, mountPollMs: 50 });
    await model.start();
    expect(model.getSnapshot().mounts).toMatchObject({ kind: 'none', reason: 'no mounter state' });
    mkdirSync(stateDir);
    const record = {
      target: '/var/lib/kubelet/pods/p/volumes/v/mount',
      id: 't1',
      volumeId: 'vol-s3',
      bucket: 'b',
      fuseBinary: 's3fs',
      readonly: false,
      daemon: { kind: 'process', pid: 42 },
      logFile: 'x.log',
      credentialFiles: [],
      publishedAt: '2026-11-01T10:00:00Z',
    };
    writeFileSync(
      join(stateDir, 'mounts.json'),
      JSON.stringify({ version: 1, mounts: { [record.target]: record } }),
    );
    await waitFor(() => model!.getSnapshot().mounts?.kind === 'records', {
      what: 'the state file re-read',
      timeoutMs: 10_000,
    });
    const mounts = model.getSnapshot().mounts;
    expect(mounts?.kind === 'records' && mounts.mounts.map((m) => m.volumeId)).toEqual(['vol-s3']);
  });
});
