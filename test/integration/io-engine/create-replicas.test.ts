import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoEngineError, type Replica } from '../../../src/lib/io-engine/client.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { CLUSTER_ID, type RunningEngine, startEngine } from './engines.js';
import { qemuIo } from './nbd-tools.js';

const MiB = 1024 * 1024;

const outcome = (r: Replica | IoEngineError) => (r instanceof IoEngineError ? r.codeName : 'created');

describe('io-engine CreateReplicas (batched creates)', () => {
  let dir: string;
  let engine: RunningEngine;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-batch-'));
    engine = await startEngine(dir, 'node-a');
    await engine.client.createPool({ name: 'p', capacity: 8 * MiB });
  });

  afterAll(async () => {
    await engine?.stop('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('answers each item as CreateReplica would, in order; the created ones survive kill -9', async () => {
    const existing = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'p',
      size: MiB,
      thin: true,
    });
    const [thin, shared, thick] = [randomUUID(), randomUUID(), randomUUID()];
    const results = await engine.client.createReplicas([
      { uuid: thin, pool: 'p', size: MiB, thin: true },
      { uuid: existing.uuid, pool: 'p', size: MiB, thin: true },
      { uuid: randomUUID(), pool: 'no-such-pool', size: MiB, thin: true },
      { uuid: randomUUID(), pool: 'p', size: 16 * MiB, thin: true },
      { uuid: shared, pool: 'p', size: 2 * MiB, thin: true, share: 'nbd' },
      { uuid: 'not/a-uuid', pool: 'p', size: MiB, thin: true },
      { uuid: thick, pool: 'p', size: MiB, thin: false },
    ]);
    expect(results.map(outcome)).toEqual([
      'created',
      'ALREADY_EXISTS',
      'NOT_FOUND',
      'RESOURCE_EXHAUSTED',
      'created',
      'INVALID_ARGUMENT',
      'created',
    ]);
    expect((results[1] as IoEngineError).message).toContain(existing.uuid);
    expect((results[3] as IoEngineError).message).toMatch(/does not fit pool 'p'/);
    expect(results[0]).toMatchObject({ uuid: thin, size: MiB, thin: true, allocated: 0 });
    expect(results[6]).toMatchObject({ uuid: thick, thin: false, allocated: MiB });

    // A new replica's file is opened on its first I/O.
    const uri = (results[4] as Replica).uri.split('?')[0];
    await qemuIo(uri, ['write -P 0x5a 0 1M', 'read -P 0x5a 0 1M']);

    // Acknowledged means durable: after kill -9 the pool imports with exactly these replicas.
    await engine.stop('SIGKILL');
    engine = await startEngine(dir, 'node-a');
    const pool = await engine.client.importPool({ name: 'p' });
    expect(pool.replicaCount).toBe(4);
    const uuids = (await engine.client.listReplicas()).map((r) => r.uuid).sort();
    expect(uuids).toEqual([existing.uuid, thin, shared, thick].sort());
    const files = (await readdir(join(engine.poolDir, 'p', 'replicas'))).sort();
    expect(files).toEqual(uuids.map((u) => `${u}.img`).sort());
    const back = await engine.client.getReplica(shared);
    await qemuIo(back.uri.split('?')[0], ['read -P 0x5a 0 1M']);
  });

  it('refuses a call with more items than one request may queue, creating nothing', async () => {
    const before = (await engine.client.listReplicas()).length;
    const items = Array.from({ length: 257 }, () => ({
      uuid: randomUUID(),
      pool: 'p',
      size: 4096,
      thin: true,
    }));
    await expect(engine.client.createReplicas(items)).rejects.toMatchObject({
      codeName: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/at most 256 replicas/),
    });
    expect(await engine.client.listReplicas()).toHaveLength(before);
  });

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
