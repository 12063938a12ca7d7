import { randomUUID } from 'node:crypto';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Nexus, Replica } from '../../../src/lib/io-engine/client.js';
import { NbdClient } from '../../../src/lib/nbd/client.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { CLUSTER_ID, code, type RunningEngine, startEngine } from './engines.js';
import { qemuIo, run } from './nbd-tools.js';

const MiB = 1024 * 1024;
const OLD = 16 * MiB;
const NEW = 32 * MiB;

/** Bytes of a replica file read directly (what the child really holds). */
async function fileBytes(path: string, offset: number, length: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(length);
    await fh.read(buf, 0, length, offset);
    return buf;
  } finally {
    await fh.close();
  }
}

describe('ResizeNexus: online growth of a 2-child nexus (local + remote over NBD)', () => {
  let dir: string;
  let a: RunningEngine;
  let b: RunningEngine;
  let local: Replica;
  let remote: Replica;
  let nexus: Nexus;
  let early: NbdClient | undefined;

  const childFile = (r: Replica) =>
    join(r.pool === 'pa' ? a.poolDir : b.poolDir, r.pool, 'replicas', `${r.uuid}.img`);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-resize-'));
    [a, b] = await Promise.all([startEngine(dir, 'node-a'), startEngine(dir, 'node-b')]);
    await a.client.createPool({ name: 'pa', capacity: 256 * MiB });
    await b.client.createPool({ name: 'pb', capacity: 256 * MiB });
    local = await a.client.createReplica({ uuid: randomUUID(), pool: 'pa', size: OLD, thin: true });
    remote = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: OLD,
      thin: true,
      share: 'nbd',
    });
    nexus = await a.client.createNexus({
      uuid: randomUUID(),
      size: OLD,
      children: [local.uri, remote.uri],
      volumeId: randomUUID(),
    });
    nexus = await a.client.publishNexus(nexus.uuid);
    await qemuIo(nexus.deviceUri, ['write -P 0x11 0 16M', 'flush']);
  });

  afterAll(async () => {
    await early?.close().catch(() => {});
    await a?.stop('SIGKILL');
    await b?.stop('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses to shrink and to grow past a child that is still small; nothing changes', async () => {
    expect(await code(a.client.resizeNexus(nexus.uuid, OLD - MiB))).toMatch(
      /^INVALID_ARGUMENT: nexus '.*' cannot shrink from 16777216 to 15728640 bytes/,
    );
    expect(await code(a.client.resizeNexus(nexus.uuid, NEW))).toMatch(
      /^FAILED_PRECONDITION: child '.*' of nexus '.*' has 16777216 bytes, less than 33554432; resize the replica first/,
    );
    // only the local replica grown: the remote child (reconnected to learn its size) still refuses
    await a.client.resizeReplica(local.uuid, NEW);
    expect(await code(a.client.resizeNexus(nexus.uuid, NEW))).toMatch(
      new RegExp(`^FAILED_PRECONDITION: child 'nbd://${b.nbdEndpoint}/.*' .* has 16777216 bytes`),
    );
    expect(await code(a.client.resizeNexus(randomUUID(), NEW))).toMatch(/^NOT_FOUND: nexus/);
    const n = await a.client.getNexus(nexus.uuid);
    expect(n.size).toBe(OLD);
    expect(n.children.map((c) => c.state)).toEqual(['Online', 'Online']);
    expect((await run('nbdinfo', ['--size', nexus.deviceUri])).trim()).toBe(String(OLD));
  });

  it('grows under I/O: replicas then nexus; new connections see the new size and write past the old end', async () => {
    // A client connected before the resize keeps writing through it (its I/O is held, not failed).
    early = await NbdClient.connect(nexus.deviceUri);
    expect(early.size).toBe(OLD);
    await b.client.resizeReplica(remote.uuid, NEW);
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 32; i++)
      writes.push(early.write(Buffer.alloc(64 * 1024, 0x33), 8 * MiB + i * 64 * 1024, false));
    const resized = await a.client.resizeNexus(nexus.uuid, NEW);
    await Promise.all(writes);
    expect(resized.size).toBe(NEW);
    expect(resized.state).toBe('Online');
    expect(resized.children.map((c) => c.state)).toEqual(['Online', 'Online']);
    // same size again: a no-op
    expect((await a.client.resizeNexus(nexus.uuid, NEW)).size).toBe(NEW);

    expect((await run('nbdinfo', ['--size', nexus.deviceUri])).trim()).toBe(String(NEW));
    await qemuIo(nexus.deviceUri, ['write -P 0x22 24M 1M', 'write -P 0x44 31M 1M', 'flush']);
    await qemuIo(nexus.deviceUri, [
      'read -P 0x11 0 8M',
      'read -P 0x33 8M 2M',
      'read -P 0x11 10M 6M',
      'read -P 0 16M 8M',
      'read -P 0x22 24M 1M',
      'read -P 0x44 31M 1M',
    ]);
    // the early client keeps its negotiated size (NBD has no resize notification) and still works
    expect(early.size).toBe(OLD);
    const back = Buffer.alloc(MiB);
    await early.read(back, 0);
    expect(back.every((x) => x === 0x11)).toBe(true);
  });

  it('both children hold the old and the new data (no rebuild)', async () => {
    for (const r of [local, remote]) {
      const f = childFile(r);
      expect((await fileBytes(f, 0, MiB)).every((x) => x === 0x11)).toBe(true);
      expect((await fileBytes(f, 8 * MiB, 2 * MiB)).every((x) => x === 0x33)).toBe(true);
      expect((await fileBytes(f, 24 * MiB, MiB)).every((x) => x === 0x22)).toBe(true);
      expect((await fileBytes(f, 31 * MiB, MiB)).every((x) => x === 0x44)).toBe(true);
    }
    const n = await a.client.getNexus(nexus.uuid);
    expect(n.rebuilds).toBe(0);
    expect(n.children.every((c) => c.state === 'Online' && c.rebuildProgress === 100)).toBe(true);
  });

  it('the swapped-in remote connection is the live one: losing the remote engine faults the child', async () => {
    await b.stop('SIGKILL');
    await qemuIo(nexus.deviceUri, ['write -P 0x55 20M 1M']);
    const n = await a.client.getNexus(nexus.uuid);
    expect(n.children.map((c) => c.state)).toEqual(['Online', 'Faulted']);
    await qemuIo(nexus.deviceUri, ['read -P 0x55 20M 1M', 'read -P 0x22 24M 1M']);
  });

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
