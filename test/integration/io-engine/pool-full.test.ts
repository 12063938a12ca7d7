import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsUrl, scrape, sum } from '../../helpers/metrics.js';
import { waitFor } from '../../helpers/wait.js';
import { type RunningEngine, startEngine } from './engines.js';
import { qemuIo, run } from './nbd-tools.js';

const MiB = 1024 * 1024;

/** A replica's NBD export as qemu opens it (without the uuid query a nexus checks). */
const exportOf = (r: { uri: string }) => r.uri.split('?')[0];

/** qemu-io's answer to commands that may fail: its whole output, failures included. */
const qemuIoOutput = (uri: string, commands: string[]) =>
  run('qemu-io', ['-f', 'raw', ...commands.flatMap((c) => ['-c', c]), uri]).catch((e: Error) => e.message);

/**
 * Thin replicas may promise more than a pool holds (overcommitment), but never write past its
 * capacity, as a disk holds Mayastor's thin lvols: the write that would allocate beyond it fails
 * with ENOSPC, overwrites go on, and space freed in the pool is usable again.
 */
describe('a full pool', () => {
  let dir: string;
  let a: RunningEngine;
  let b: RunningEngine;
  let smallDisk: string | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-full-'));
    [a, b] = await Promise.all([
      startEngine(dir, 'node-a', { extraArgs: ['--metrics-address', '127.0.0.1:0'] }),
      startEngine(dir, 'node-b'),
    ]);
  });
  afterAll(async () => {
    for (const e of [a, b]) await e?.stop('SIGKILL');
    if (smallDisk) execFileSync('umount', [smallDisk]);
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses thin writes that allocate past its capacity with ENOSPC; overwrites and freed space go on', async () => {
    await a.client.createPool({ name: 'small', capacity: 32 * MiB });
    const thin = () =>
      a.client.createReplica({ uuid: randomUUID(), pool: 'small', size: 24 * MiB, thin: true, share: 'nbd' });
    const [first, second] = [await thin(), await thin()];
    await qemuIo(exportOf(first), ['write -P 0x11 0 24M']);
    await qemuIo(exportOf(second), ['write -P 0x22 0 6M']);
    // 30 of 32 MiB held: 6 MiB more do not fit.
    const refused = await qemuIoOutput(exportOf(second), ['write -P 0x23 6M 6M']);
    expect(refused).toMatch(/No space left on device/);
    // What is allocated can be written again, and reads back.
    await qemuIo(exportOf(first), ['write -P 0x12 0 1M', 'read -P 0x12 0 1M', 'read -P 0x11 1M 23M']);
    await qemuIo(exportOf(second), ['write -P 0x24 0 6M', 'read -P 0x24 0 6M']);
    // The pool holds at most its capacity and a piece of the refused write (64 KiB: it is measured as it lands).
    const full = await waitFor(
      async () => {
        const p = await a.client.getPool('small');
        return p.used >= 30 * MiB ? p : null;
      },
      { what: 'the pool stats refreshed' },
    );
    expect(full.used).toBeLessThanOrEqual(32 * MiB + 64 * 1024);
    expect(full.free).toBe(0);
    // What an alert counts: the refused write, on this pool only.
    const samples = await scrape(metricsUrl(a.proc)!);
    expect(
      sum(samples, 'storctl_pool_writes_refused_total', { node: 'node-a', name: 'small' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sum(samples, 'disk_pool_total_size_bytes', { node: 'node-a', name: 'small' })).toBe(32 * MiB);

    // Space freed in the pool is usable at once.
    await a.client.destroyReplica(first.uuid);
    await qemuIo(exportOf(second), ['write -P 0x25 6M 18M', 'read -P 0x24 0 6M', 'read -P 0x25 6M 18M']);
  });

  it('on a filesystem with less room than its declared capacity, it says what fits, and refuses more before allocating', async () => {
    // A disk of our own, 8 MiB, under a pool declared 64 MiB (a pool directory on a shared disk).
    smallDisk = join(dir, 'node-a', 'pools', 'small-disk');
    await mkdir(smallDisk);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'storctl-ioe-small-disk', smallDisk]);
    const created = await a.client.createPool({
      name: 'shared',
      capacity: 64 * MiB,
      disk: join(smallDisk, 'pool'),
    });
    // Before: capacity and free space were the declared 64 MiB, on a disk with 8.
    expect(created.capacity).toBeLessThanOrEqual(8 * MiB);
    expect(created.free).toBeLessThanOrEqual(8 * MiB);
    // A thick replica that does not fit the disk is refused by the pool, saying why, not by fallocate.
    await expect(
      a.client.createReplica({
        uuid: randomUUID(),
        pool: 'shared',
        size: 16 * MiB,
        thin: false,
        share: 'none',
      }),
    ).rejects.toThrow(
      new RegExp(
        `pool 'shared' has \\d+ bytes free \\(the filesystem holding ${join(smallDisk, 'pool')} has \\d+ bytes left\\), replica '.*' needs ${16 * MiB}; use a thin replica or another pool`,
      ),
    );
    // A thin one fills the disk: its write fails with ENOSPC, and the pool says it is full.
    const thin = await a.client.createReplica({
      uuid: randomUUID(),
      pool: 'shared',
      size: 16 * MiB,
      thin: true,
      share: 'nbd',
    });
    expect(await qemuIoOutput(exportOf(thin), ['write -P 0x61 0 16M'])).toMatch(/No space left on device/);
    const full = await waitFor(
      async () => {
        const p = await a.client.getPool('shared');
        return p.free === 0 ? p : null;
      },
      { what: 'the pool full' },
    );
    expect(full.capacity).toBe(full.used);
  });

  it('near full, writes in flight at once to one replica are refused only when the pool is really full', async () => {
    await a.client.createPool({ name: 'busy', capacity: 32 * MiB });
    const thin = () =>
      a.client.createReplica({ uuid: randomUUID(), pool: 'busy', size: 24 * MiB, thin: true, share: 'nbd' });
    const [first, second] = [await thin(), await thin()];
    await qemuIo(exportOf(first), ['write -P 0x61 0 20M']);
    // 11 MiB more, 1 MiB requests all in flight at once: 31 of 32 MiB, so every one fits.
    await run('qemu-img', ['bench', '-w', '-f', 'raw', '-c', '11', '-d', '16', '-s', '1M', exportOf(second)]);
    await qemuIo(exportOf(second), ['write -P 0x62 0 11M', 'read -P 0x62 0 11M']);
    // ...and the next 2 MiB do not.
    expect(await qemuIoOutput(exportOf(second), ['write -P 0x63 11M 2M'])).toMatch(/No space left on device/);
  });

  it("a nexus faults the child on a full pool and serves on; its last child's ENOSPC reaches the client", async () => {
    await a.client.createPool({ name: 'roomy', capacity: 256 * MiB });
    await b.client.createPool({ name: 'tight', capacity: 24 * MiB });
    // Another thin replica fills most of the tight pool.
    const filler = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'tight',
      size: 20 * MiB,
      thin: true,
      share: 'nbd',
    });
    await qemuIo(exportOf(filler), ['write -P 0x31 0 20M']);
    const local = await a.client.createReplica({
      uuid: randomUUID(),
      pool: 'roomy',
      size: 16 * MiB,
      thin: true,
      share: 'none',
    });
    const remote = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'tight',
      size: 16 * MiB,
      thin: true,
      share: 'nbd',
    });
    const uuid = randomUUID();
    await a.client.createNexus({ uuid, size: 16 * MiB, children: [local.uri, remote.uri] });
    const target = (await a.client.publishNexus(uuid)).deviceUri;
    await qemuIo(target, ['write -P 0x41 0 2M']);
    // 22 of 24 MiB held in the tight pool: the next 8 MiB do not fit there, and do in the roomy one.
    await qemuIo(target, ['write -P 0x42 2M 8M', 'read -P 0x41 0 2M', 'read -P 0x42 2M 8M']);
    const n = await a.client.getNexus(uuid);
    expect(n.state).toBe('Degraded');
    const faulted = n.children.find((c) => c.uri === remote.uri)!;
    expect(faulted.state).toBe('Faulted');
    expect(faulted.reason).toMatch(/remote error ENOSPC \(28\)/);

    // A nexus whose only child sits on a full pool keeps the child and tells the client ENOSPC.
    const lone = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'tight',
      size: 8 * MiB,
      thin: true,
      share: 'nbd',
    });
    const single = randomUUID();
    await a.client.createNexus({ uuid: single, size: 8 * MiB, children: [lone.uri] });
    const singleTarget = (await a.client.publishNexus(single)).deviceUri;
    expect(await qemuIoOutput(singleTarget, ['write -P 0x51 0 8M'])).toMatch(/No space left on device/);
    expect((await a.client.getNexus(single)).children.map((c) => c.state)).toEqual(['Online']);
  });
});
