import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { waitFor } from '../../helpers/wait.js';
import { CLUSTER_ID, type RunningEngine, startEngine } from './engines.js';
import { qemuIo } from './nbd-tools.js';

const MiB = 1024 * 1024;

describe('the last healthy child is never dropped', () => {
  let dir: string;
  let store: Store;
  let a: RunningEngine;
  let b: RunningEngine;
  let c: RunningEngine;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-last-'));
    [a, b, c] = await Promise.all([
      startEngine(dir, 'node-a'),
      startEngine(dir, 'node-b'),
      startEngine(dir, 'node-c'),
    ]);
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
  });

  afterAll(async () => {
    for (const e of [a, b, c]) await e?.stop('SIGKILL');
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('faults the first remote child that dies, keeps the last one and, its connection lost, shuts down instead', async () => {
    await b.client.createPool({ name: 'pb', capacity: 64 * MiB });
    await c.client.createPool({ name: 'pc', capacity: 64 * MiB });
    const rb = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: 8 * MiB,
      thin: true,
      share: 'nbd',
    });
    const rc = await c.client.createReplica({
      uuid: randomUUID(),
      pool: 'pc',
      size: 8 * MiB,
      thin: true,
      share: 'nbd',
    });
    const uuid = randomUUID();
    const created = await a.client.createNexus({ uuid, size: 8 * MiB, children: [rb.uri, rc.uri] });
    const target = (await a.client.publishNexus(uuid)).deviceUri;
    await qemuIo(target, ['write -P 0x3c 0 1M']);

    await b.stop('SIGKILL');
    await waitFor(async () => (await a.client.getNexus(uuid)).state === 'Degraded', {
      what: 'first child faulted',
    });
    await qemuIo(target, ['write -P 0x3d 0 1M', 'read -P 0x3d 0 1M']);

    // Its replica is intact, only unreachable: the nexus shuts itself down (I/O answered
    // NBD_ESHUTDOWN, which a path proxy holds and HA answers with a new target; its export gone)
    // instead of failing the writes as EIO.
    await c.stop('SIGKILL');
    await waitFor(async () => (await a.client.getNexus(uuid)).state === 'Shutdown', {
      what: 'the nexus shut down',
    });
    await expect(qemuIo(target, ['write -P 0x3e 0 1M'])).rejects.toThrow();
    const n = await a.client.getNexus(uuid);
    expect(n.children.map((ch) => ch.state)).toEqual(['Faulted', 'Online']);
    expect(n.state).toBe('Shutdown');
    // NexusInfo still names the last good replica as healthy: it is the one to recover from.
    expect(JSON.parse((await store.get(created.nexusInfoKey))!.value)).toEqual({
      children: [
        { healthy: false, uuid: rb.uuid },
        { healthy: true, uuid: rc.uuid },
      ],
      clean_shutdown: false,
    });
  });

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
