import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { waitFor } from '../../helpers/wait.js';
import { CLUSTER_ID, type RunningEngine, startEngine } from './engines.js';
import { qemuIo } from './nbd-tools.js';

const MiB = 1024 * 1024;

describe('a nexus that cannot record a child fault shuts itself down', () => {
  let dir: string;
  let a: RunningEngine;
  let b: RunningEngine;
  let store: Store;
  let lock: Database.Database | null = null;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-selfshut-'));
    [a, b] = await Promise.all([
      startEngine(dir, 'node-a', { extraArgs: ['--nexus-info-retries', '0'] }),
      startEngine(dir, 'node-b'),
    ]);
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
  });

  afterAll(async () => {
    if (lock?.inTransaction) lock.exec('ROLLBACK');
    lock?.close();
    for (const e of [a, b]) await e?.stop('SIGKILL');
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * A published nexus on `a` over a replica of pool `pools[0]` there and one of `pools[1]` on
   * `remote`, its first MiB written with `pattern`.
   */
  async function mirrored(remote: RunningEngine, pools: [string, string], pattern: string) {
    await a.client.createPool({ name: pools[0], capacity: 64 * MiB });
    await remote.client.createPool({ name: pools[1], capacity: 64 * MiB });
    const local = await a.client.createReplica({
      uuid: randomUUID(),
      pool: pools[0],
      size: 8 * MiB,
      thin: true,
    });
    const other = await remote.client.createReplica({
      uuid: randomUUID(),
      pool: pools[1],
      size: 8 * MiB,
      thin: true,
      share: 'nbd',
    });
    const uuid = randomUUID();
    const created = await a.client.createNexus({ uuid, size: 8 * MiB, children: [local.uri, other.uri] });
    const target = (await a.client.publishNexus(uuid)).deviceUri;
    await qemuIo(target, [`write -P ${pattern} 0 1M`]);
    return { local, remote: other, uuid, created, target };
  }

  it('stops serving instead of running on with a stale NexusInfo', async () => {
    const { local, remote, uuid, created, target } = await mirrored(b, ['pa', 'pb'], '0x21');

    // The store refuses writes (another process holds the write lock) while a child dies.
    lock = new Database(join(dir, 'store.db'));
    lock.exec('BEGIN EXCLUSIVE');
    await b.stop('SIGKILL');
    const n = await waitFor(
      async () => {
        const x = await a.client.getNexus(uuid);
        return x.state === 'Shutdown' ? x : null;
      },
      { what: 'nexus self-shutdown', timeoutMs: 40_000 },
    );
    expect(n.deviceUri).toBe('');
    // It says why, for core and the operator (`describe volume`).
    expect(n.shutdownReason).toMatch(/^NexusInfo could not be persisted: cannot persist NexusInfo .*locked/);
    lock.exec('COMMIT');
    lock.close();
    lock = null;
    await expect(qemuIo(target, ['read 0 4k'])).rejects.toThrow();
    // The record was never rewritten: not a clean shutdown, so the next target rebuilds from one replica.
    expect(JSON.parse((await store.get(created.nexusInfoKey))!.value)).toEqual({
      children: [
        { healthy: true, uuid: local.uuid },
        { healthy: true, uuid: remote.uuid },
      ],
      clean_shutdown: false,
    });
    await a.client.destroyNexus(uuid);
    expect(JSON.parse((await store.get(created.nexusInfoKey))!.value).clean_shutdown).toBe(false);
  });

  it('a fault found while a write is in flight: the write fails, the export goes, the local replica is free for the next target', async () => {
    const c = await startEngine(dir, 'node-c');
    try {
      const { local, uuid, target } = await mirrored(c, ['pa2', 'pc'], '0x31');

      lock = new Database(join(dir, 'store.db'));
      lock.exec('BEGIN EXCLUSIVE');
      await c.stop('SIGKILL');
      // Sent while the fault is being recorded (the store is locked): it waits for that record.
      const write = qemuIo(target, ['write -P 0x32 0 64k']).then(
        () => 'acknowledged',
        () => 'failed',
      );
      await waitFor(
        async () => {
          const x = await a.client.getNexus(uuid);
          return x.state === 'Shutdown' && x.deviceUri === '';
        },
        { what: 'the nexus shut down and unexported', timeoutMs: 40_000 },
      );
      expect(await write).toBe('failed');
      lock.exec('COMMIT');
      lock.close();
      lock = null;
      await a.client.destroyNexus(uuid);
      // What a republish on this node does: a new target from the replica that was healthy.
      const next = randomUUID();
      await a.client.createNexus({ uuid: next, size: 8 * MiB, children: [local.uri] });
      await qemuIo((await a.client.publishNexus(next)).deviceUri, ['read -P 0x31 64k 960k']);
      await a.client.destroyNexus(next);
    } finally {
      await c.stop('SIGKILL');
    }
  }, 90_000);

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
