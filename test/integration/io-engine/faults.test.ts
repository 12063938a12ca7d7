import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Replica } from '../../../src/lib/io-engine/client.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { waitFor } from '../../helpers/wait.js';
import { CLUSTER_ID, type RunningEngine, replicaFile, startEngine, startThreeChildNexus } from './engines.js';
import { qemuIo } from './nbd-tools.js';

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const BLOCK = 512 * 1024;
const BLOCKS = SIZE / BLOCK;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Every block once, each with its own pattern (never 0). */
const workload = (seed: number, passes = 1) => {
  const cmds: string[] = [];
  for (let p = 0; p < passes; p++)
    for (let i = 0; i < BLOCKS; i++) cmds.push(`write -P ${((i + seed) % 250) + 1} ${i * BLOCK} ${BLOCK}`);
  return cmds;
};
const verify = (seed: number) =>
  Array.from({ length: BLOCKS }, (_, i) => `read -P ${((i + seed) % 250) + 1} ${i * BLOCK} ${BLOCK}`);

describe('faults: a child node dies, a child is rebuilt, the nexus node dies', () => {
  let dir: string;
  let store: Store;
  let a: RunningEngine; // nexus host, one local child
  let b: RunningEngine; // one remote child, later the replacement
  let c: RunningEngine; // one remote child, killed
  let local: Replica;
  let r1: Replica;
  let r2: Replica;
  let r3: Replica;
  let nexusUuid: string;
  let infoKey: string;
  const volume = randomUUID();

  const fileOf = replicaFile;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-faults-'));
    ({ a, b, c, local, r1, r2, nexusUuid, infoKey } = await startThreeChildNexus(dir, SIZE, volume));
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
  });

  afterAll(async () => {
    for (const e of [a, b, c]) await e?.stop('SIGKILL');
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('kill -9 of the node holding a remote child during writes: writes complete, Degraded, NexusInfo updated', async () => {
    const target = (await a.client.getNexus(nexusUuid)).deviceUri;
    const writing = qemuIo(target, workload(1));
    // kill once writes are reaching the children
    await waitFor(async () => (await stat(fileOf(c, 'pc', r2))).blocks > 0, {
      what: 'first writes on node-c',
    });
    await c.stop('SIGKILL');
    await writing; // every write completed without error
    // the kill really happened mid-workload: node-c holds only part of it
    expect((await stat(fileOf(c, 'pc', r2))).blocks * 512).toBeLessThan(SIZE);
    const n = await waitFor(
      async () => {
        const x = await a.client.getNexus(nexusUuid);
        return x.state === 'Degraded' ? x : null;
      },
      { what: 'nexus Degraded' },
    );
    expect(n.children.map((ch) => [ch.uuid, ch.state])).toEqual([
      [local.uuid, 'Online'],
      [r1.uuid, 'Online'],
      [r2.uuid, 'Faulted'],
    ]);
    expect(n.children[2].reason).not.toBe('');
    expect(JSON.parse((await store.get(infoKey))!.value)).toEqual({
      children: [
        { healthy: true, uuid: local.uuid },
        { healthy: true, uuid: r1.uuid },
        { healthy: false, uuid: r2.uuid },
      ],
      clean_shutdown: false,
    });
    await qemuIo(target, verify(1));
    expect(sha(await readFile(fileOf(a, 'pa', local)))).toBe(sha(await readFile(fileOf(b, 'pb', r1))));
  });

  it('a new child is rebuilt while writes continue and ends equal to the others', async () => {
    const target = (await a.client.getNexus(nexusUuid)).deviceUri;
    r3 = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: SIZE,
      thin: true,
      share: 'nbd',
    });
    await a.client.removeChildNexus(nexusUuid, r2.uri);
    let writesDone = false;
    const writing = qemuIo(target, workload(2, 3)).then(() => {
      writesDone = true;
    });
    const added = await a.client.addChildNexus(nexusUuid, r3.uri);
    expect(writesDone).toBe(false); // the rebuild starts while the writes are running
    const child = added.children.find((ch) => ch.uuid === r3.uuid)!;
    expect(child.state).toBe('Degraded');
    expect(child.rebuildProgress).toBeLessThan(100);
    expect(added.state).toBe('Degraded');
    expect(JSON.parse((await store.get(infoKey))!.value).children).toContainEqual({
      healthy: false,
      uuid: r3.uuid,
    });
    const progress = new Set<number>();
    await waitFor(
      async () => {
        const x = await a.client.getNexus(nexusUuid);
        progress.add(x.children.find((ch) => ch.uuid === r3.uuid)!.rebuildProgress);
        return x.state === 'Online';
      },
      { what: 'rebuild complete', intervalMs: 10 },
    );
    await writing;
    expect([...progress].every((p) => p >= 0 && p <= 100)).toBe(true);
    expect(progress.has(100)).toBe(true);
    expect([...progress].some((p) => p > 0 && p < 100)).toBe(true); // progress visible mid-rebuild
    expect(JSON.parse((await store.get(infoKey))!.value)).toEqual({
      children: [
        { healthy: true, uuid: local.uuid },
        { healthy: true, uuid: r1.uuid },
        { healthy: true, uuid: r3.uuid },
      ],
      clean_shutdown: false,
    });
    await qemuIo(target, verify(2));
    const hashes = [
      sha(await readFile(fileOf(a, 'pa', local))),
      sha(await readFile(fileOf(b, 'pb', r1))),
      sha(await readFile(fileOf(b, 'pb', r3))),
    ];
    expect(new Set(hashes).size).toBe(1);
  });

  it('kill -9 of the nexus node, restart, recreate from NexusInfo: data intact, unclean shutdown recorded', async () => {
    await a.stop('SIGKILL');
    const info = JSON.parse((await store.get(infoKey))!.value);
    expect(info.clean_shutdown).toBe(false);
    a = await startEngine(dir, 'node-a');
    expect(await a.client.listNexuses()).toEqual([]);
    await a.client.importPool({ name: 'pa' });
    const n = await a.client.createNexus({
      uuid: nexusUuid,
      size: SIZE,
      children: [local.uri, r1.uri, r3.uri],
      volumeId: volume,
    });
    // unclean shutdown: one healthy child serves, the others are rebuilt from it
    expect(n.children.map((ch) => ch.state)).toEqual(['Online', 'Degraded', 'Degraded']);
    const target = (await a.client.publishNexus(nexusUuid)).deviceUri;
    await qemuIo(target, verify(2));
    await waitFor(async () => (await a.client.getNexus(nexusUuid)).state === 'Online', {
      what: 'rebuilds after restart',
    });
    await qemuIo(target, verify(2));
    const hashes = [
      sha(await readFile(fileOf(a, 'pa', local))),
      sha(await readFile(fileOf(b, 'pb', r1))),
      sha(await readFile(fileOf(b, 'pb', r3))),
    ];
    expect(new Set(hashes).size).toBe(1);
    // a clean stop records a clean shutdown
    await a.stop('SIGTERM');
    expect(JSON.parse((await store.get(infoKey))!.value)).toMatchObject({ clean_shutdown: true });
  });

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
