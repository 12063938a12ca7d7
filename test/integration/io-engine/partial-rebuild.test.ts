import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Nexus, Replica } from '../../../src/lib/io-engine/client.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { fatal, waitFor } from '../../helpers/wait.js';
import { type RunningEngine, replicaFile, startEngine, startThreeChildNexus } from './engines.js';
import { qemuIo } from './nbd-tools.js';

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const BLOCK = 256 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const pattern = (i: number, seed: number) => ((i * 7 + seed) % 250) + 1;

/** Writes of [start, start + len) in BLOCK pieces, each with its own pattern (never 0). */
const writes = (start: number, len: number, seed: number, passes = 1) => {
  const cmds: string[] = [];
  for (let p = 0; p < passes; p++)
    for (let o = start; o < start + len; o += BLOCK)
      cmds.push(`write -P ${pattern(o / BLOCK, seed + p)} ${o} ${BLOCK}`);
  return cmds;
};
/** Reads checking what `writes(start, len, seed, passes)` left. */
const reads = (start: number, len: number, seed: number, passes = 1) => {
  const cmds: string[] = [];
  for (let o = start; o < start + len; o += BLOCK)
    cmds.push(`read -P ${pattern(o / BLOCK, seed + passes - 1)} ${o} ${BLOCK}`);
  return cmds;
};

const nbdPort = (e: RunningEngine) => Number(e.nbdEndpoint.split(':').pop());

describe('partial rebuild: a child back from a short outage is rebuilt from the log of writes it missed', () => {
  let dir: string;
  let store: Store;
  let a: RunningEngine; // nexus host, one local child
  let b: RunningEngine; // remote child
  let c: RunningEngine; // remote child
  let local: Replica;
  let r1: Replica;
  let r2: Replica;
  let nexusUuid: string;
  let infoKey: string;
  let target: string;
  const volume = randomUUID();

  const fileOf = replicaFile;
  const hashes = async () =>
    new Set([
      sha(await readFile(fileOf(a, 'pa', local))),
      sha(await readFile(fileOf(b, 'pb', r1))),
      sha(await readFile(fileOf(c, 'pc', r2))),
    ]);
  const childOf = (n: Nexus, r: Replica) => n.children.find((ch) => ch.uuid === r.uuid)!;
  const waitChild = (r: Replica, state: string) =>
    waitFor(
      async () => {
        const n = await a.client.getNexus(nexusUuid);
        return childOf(n, r)?.state === state ? n : null;
      },
      { what: `child ${r.uuid} ${state}`, intervalMs: 10 },
    );
  /** Restart a killed remote io-engine on the same NBD port (child URIs stay valid). */
  const restart = async (e: RunningEngine, pool: string) => {
    const again = await startEngine(dir, e.node, { nbdPort: nbdPort(e) });
    await again.client.importPool({ name: pool });
    return again;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-partial-'));
    ({ a, b, c, local, r1, r2, nexusUuid, infoKey, target } = await startThreeChildNexus(dir, SIZE, volume));
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    // every byte written once, so a stale region shows in the hashes
    await qemuIo(target, writes(0, SIZE, 1));
  });

  afterAll(async () => {
    for (const e of [a, b, c]) await e?.stop('SIGKILL');
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('kill -9 of a remote child’s io-engine during writes, restart: only the missed regions are copied', async () => {
    const before = (await stat(fileOf(b, 'pb', r1))).mtimeMs;
    const writing = qemuIo(target, writes(0, 8 * MiB, 10, 4));
    await waitFor(async () => (await stat(fileOf(b, 'pb', r1))).mtimeMs > before, {
      what: 'writes reaching node-b',
      intervalMs: 5,
    });
    await b.stop('SIGKILL');
    await writing; // every write completed although a child died under them
    await waitChild(r1, 'Faulted');
    expect(JSON.parse((await store.get(infoKey))!.value).children).toContainEqual({
      healthy: false,
      uuid: r1.uuid,
    });
    // more writes while the child is away
    await qemuIo(target, writes(40 * MiB, 2 * MiB, 20));
    b = await restart(b, 'pb');
    const added = await a.client.addChildNexus(nexusUuid, r1.uri);
    expect(childOf(added, r1).rebuildPartial).toBe(true);
    const done = await waitChild(r1, 'Online');
    expect(done.state).toBe('Online');
    const copied = childOf(done, r1).rebuiltBytes;
    // the regions written while away (8 MiB + 2 MiB), not the 64 MiB volume
    expect(copied).toBeGreaterThanOrEqual(2 * MiB);
    expect(copied).toBeLessThanOrEqual(12 * MiB);
    const history = await a.client.getRebuildHistory(nexusUuid);
    const last = history.at(-1)!;
    expect(last).toMatchObject({ childUri: r1.uri, state: 'Completed', isPartial: true, blockSize: 512 });
    expect(last.blocksTransferred * 512).toBe(copied);
    expect(last.blocksTotal * 512).toBe(SIZE);
    expect(JSON.parse((await store.get(infoKey))!.value).children).toContainEqual({
      healthy: true,
      uuid: r1.uuid,
    });
    await qemuIo(target, [...reads(0, 8 * MiB, 10, 4), ...reads(40 * MiB, 2 * MiB, 20)]);
    expect((await hashes()).size).toBe(1);
  });

  it('a dropped connection, then writes during the partial rebuild: every child ends byte-identical', async () => {
    // drops the NBD connection to node-c: the child is Faulted and its log starts
    const before = Date.now();
    await a.client.faultNexusChild(nexusUuid, r2.uri);
    // with the time of the fault, which core's faulted-child wait counts from
    const faultedAt = childOf(await waitChild(r2, 'Faulted'), r2).faultedAt;
    expect(faultedAt).toBeGreaterThanOrEqual(before);
    expect(faultedAt).toBeLessThanOrEqual(Date.now());
    await qemuIo(target, writes(8 * MiB, 24 * MiB, 30));
    let writesDone = false;
    // overlapping the dirty region and beyond it, for longer than the rebuild
    const writing = qemuIo(target, writes(16 * MiB, 32 * MiB, 40, 3)).then(() => {
      writesDone = true;
    });
    const added = await a.client.addChildNexus(nexusUuid, r2.uri);
    expect(writesDone).toBe(false);
    expect(childOf(added, r2)).toMatchObject({ state: 'Degraded', rebuildPartial: true });
    const done = await waitChild(r2, 'Online');
    expect(childOf(done, r2).faultedAt).toBeNull();
    await writing;
    const copied = childOf(done, r2).rebuiltBytes;
    expect(copied).toBeGreaterThanOrEqual(24 * MiB);
    expect(copied).toBeLessThan(SIZE);
    expect((await a.client.getRebuildHistory(nexusUuid)).at(-1)).toMatchObject({
      childUri: r2.uri,
      state: 'Completed',
      isPartial: true,
    });
    await qemuIo(target, [...reads(8 * MiB, 8 * MiB, 30), ...reads(16 * MiB, 32 * MiB, 40, 3)]);
    expect((await hashes()).size).toBe(1);
  });

  it('kill -9 of the nexus’s io-engine mid partial rebuild: the child is rebuilt in full after the restart', async () => {
    await c.stop('SIGKILL');
    await qemuIo(target, writes(0, 2 * MiB, 50)); // notices the dead child
    await waitChild(r2, 'Faulted');
    // nearly the whole volume while away, so the partial rebuild takes a while
    await qemuIo(target, writes(0, SIZE, 60));
    c = await restart(c, 'pc');
    const added = await a.client.addChildNexus(nexusUuid, r2.uri);
    expect(childOf(added, r2)).toMatchObject({ state: 'Degraded', rebuildPartial: true });
    await waitFor(
      async () => {
        const ch = childOf(await a.client.getNexus(nexusUuid), r2);
        if (ch.state !== 'Degraded') fatal(`the rebuild ended before the kill: ${ch.state}`);
        return ch.rebuiltBytes > 0;
      },
      { what: 'partial rebuild under way', intervalMs: 5 },
    );
    await a.stop('SIGKILL');
    // the child was mid-rebuild: NexusInfo never called it healthy
    const info = JSON.parse((await store.get(infoKey))!.value);
    expect(info.children).toContainEqual({ healthy: false, uuid: r2.uuid });
    expect(info.clean_shutdown).toBe(false);

    a = await startEngine(dir, 'node-a');
    await a.client.importPool({ name: 'pa' });
    const n = await a.client.createNexus({
      uuid: nexusUuid,
      size: SIZE,
      children: [local.uri, r1.uri, r2.uri],
      volumeId: volume,
    });
    // the half-rebuilt child is not taken back as it is
    expect(n.children.find((ch) => ch.uuid === r2.uuid)).toBeUndefined();
    target = (await a.client.publishNexus(nexusUuid)).deviceUri;
    const back = await a.client.addChildNexus(nexusUuid, r2.uri);
    expect(childOf(back, r2)).toMatchObject({ state: 'Degraded', rebuildPartial: false });
    const done = await waitFor(
      async () => {
        const x = await a.client.getNexus(nexusUuid);
        return x.state === 'Online' ? x : null;
      },
      { what: 'rebuilds after the restart', intervalMs: 10 },
    );
    expect(childOf(done, r2)).toMatchObject({ rebuiltBytes: SIZE, rebuildPartial: false });
    const history = await a.client.getRebuildHistory(nexusUuid);
    expect(history.find((h) => h.childUri === r2.uri)).toMatchObject({
      state: 'Completed',
      isPartial: false,
    });
    await qemuIo(target, reads(0, SIZE, 60));
    expect((await hashes()).size).toBe(1);
  });
});
