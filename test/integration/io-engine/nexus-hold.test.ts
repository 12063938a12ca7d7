import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Nexus } from '../../../src/lib/io-engine/client.js';
import { NbdClient } from '../../../src/lib/nbd/client.js';
import { code, type RunningEngine, startEngine } from './engines.js';

const MiB = 1024 * 1024;

/** HoldNexusIo / ReleaseNexusIo: what core holds a published volume's I/O with while it snapshots. */
describe('nexus I/O holds', () => {
  let dir: string;
  let engine: RunningEngine;
  let nexus: Nexus;
  let nbd: NbdClient;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-hold-'));
    engine = await startEngine(dir, 'node-a');
    await engine.client.createPool({ name: 'pa', capacity: 64 * MiB });
    const r = await engine.client.createReplica({
      uuid: randomUUID(),
      pool: 'pa',
      size: 8 * MiB,
      thin: true,
    });
    nexus = await engine.client.createNexus({
      uuid: randomUUID(),
      size: 8 * MiB,
      children: [r.uri],
      volumeId: randomUUID(),
    });
    nexus = await engine.client.publishNexus(nexus.uuid);
    nbd = await NbdClient.connect(nexus.deviceUri);
  });
  afterAll(async () => {
    await nbd?.close();
    await engine?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a write waits while the I/O is held and completes once it is released', async () => {
    const hold = await engine.client.holdNexusIo(nexus.uuid, 30_000);
    let done = false;
    const write = nbd.write(Buffer.alloc(4096, 1), 0, false).then(() => {
      done = true;
    });
    await engine.client.getNexus(nexus.uuid); // a round trip the write could have made meanwhile
    expect(done).toBe(false);
    await engine.client.releaseNexusIo(nexus.uuid, hold);
    await write;
    expect(done).toBe(true);
    // Released once: a second release finds nothing.
    expect(await code(engine.client.releaseNexusIo(nexus.uuid, hold))).toMatch(/^NOT_FOUND: I\/O hold/);
  });

  it('a hold nobody releases ends by itself at its timeout; its release is then NOT_FOUND', async () => {
    const hold = await engine.client.holdNexusIo(nexus.uuid, 300);
    await nbd.write(Buffer.alloc(4096, 2), 0, false); // completes once the hold expires
    expect(await code(engine.client.releaseNexusIo(nexus.uuid, hold))).toMatch(
      /^NOT_FOUND: I\/O hold .* it expired \(its timeout passed\) or was released/,
    );
  });

  it('refuses a bad timeout, an unknown nexus and an unknown hold', async () => {
    expect(await code(engine.client.holdNexusIo(nexus.uuid, 0))).toMatch(/^INVALID_ARGUMENT: hold timeout/);
    expect(await code(engine.client.holdNexusIo(nexus.uuid, 600_000))).toMatch(/^INVALID_ARGUMENT/);
    expect(await code(engine.client.holdNexusIo(randomUUID(), 1000))).toMatch(/^NOT_FOUND: nexus/);
    expect(await code(engine.client.releaseNexusIo(nexus.uuid, randomUUID()))).toMatch(/^NOT_FOUND/);
  });

  it('a hold whose I/O in flight does not finish in time (a stalled child) is UNAVAILABLE and holds nothing', async () => {
    const remoteEngine = await startEngine(dir, 'node-b');
    try {
      await remoteEngine.client.createPool({ name: 'pb', capacity: 64 * MiB });
      const remote = await remoteEngine.client.createReplica({
        uuid: randomUUID(),
        pool: 'pb',
        size: 8 * MiB,
        thin: true,
        share: 'nbd',
      });
      const two = await engine.client.publishNexus(
        (
          await engine.client.createNexus({
            uuid: randomUUID(),
            size: 8 * MiB,
            children: [remote.uri],
            volumeId: randomUUID(),
          })
        ).uuid,
      );
      const client = await NbdClient.connect(two.deviceUri);
      remoteEngine.proc.child.kill('SIGSTOP');
      try {
        const stuck = client.write(Buffer.alloc(4096, 3), 0, false);
        stuck.catch(() => {});
        expect(await code(engine.client.holdNexusIo(two.uuid, 500))).toMatch(
          /^UNAVAILABLE: I\/O in flight on nexus .* did not finish within 500 ms/,
        );
      } finally {
        remoteEngine.proc.child.kill('SIGCONT');
      }
      // Nothing stays held: new I/O is served.
      await client.read(Buffer.alloc(4096), 4096);
      await client.close();
    } finally {
      await remoteEngine.stop();
    }
  });
});
