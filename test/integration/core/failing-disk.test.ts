import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RestError } from '../../../src/lib/rest/errors.js';
import { waitFor } from '../../helpers/wait.js';
import { type FailingDisk, mountFailingDisk } from '../io-engine/failing-disk.js';
import { coreFlags, newVolumeId, POOL_CAPACITY, TestCluster } from './cluster.js';

const exec = promisify(execFile);
const MiB = 1 << 20;

/**
 * A pool whose disk fails a flush under a published volume, as an operator meets it: the events
 * say which replica faulted and why (the disk's EIO), and once the disk is back the replica is
 * added again and holds, on its disk, what the flush acknowledged.
 */
describe('a replica whose disk fails', () => {
  let c: TestCluster;
  let disk: FailingDisk;

  beforeAll(async () => {
    c = await TestCluster.start({
      engines: 2,
      pools: false,
      coreFlags: coreFlags({ '--faulted-child-wait-period': '1h' }),
    });
    await c.createNodePool('node-1', POOL_CAPACITY);
    disk = await mountFailingDisk(
      await mkdtemp(join(tmpdir(), 'storctl-failing-disk-')),
      join(c.dir, 'node-2', 'pool'),
    );
    await c.createNodePool('node-2', 128 * MiB);
  }, 60_000);

  afterAll(async () => {
    await c?.stop(async () => {
      await disk?.dispose();
    });
  });

  it('is named with its I/O error in the events, and rebuilt with what was flushed once the disk is back', async () => {
    const id = newVolumeId();
    const published = await c.createPublished(id, {
      size: 16 * MiB,
      replicas: 2,
      node: 'node-1',
      thin: false,
      selfHeal: true,
    });
    const target = published.state.target!.deviceUri;
    const io = (...cmds: string[]) =>
      exec('qemu-io', ['-f', 'raw', '-t', 'writeback', ...cmds.flatMap((x) => ['-c', x]), target]);
    await io('write -P 0x31 0 8M', 'flush');
    await disk.fail();
    await io('write -P 0x32 0 4M', 'flush');
    const waiting = await waitFor(
      async () => (await c.events()).find((e) => e.includes('"WaitingForChild"') && e.includes(id)),
      { what: 'the WaitingForChild event' },
    );
    expect(JSON.parse(waiting).message).toMatch(/faulted at \S+ \(.*EIO.*\); waiting until/);
    // The pool is Degraded, says why, and takes no new replica meanwhile.
    const degraded = await waitFor(
      async () => (await c.events()).find((e) => e.includes('"Degraded"') && e.includes('"pool-node-2"')),
      { what: 'the pool Degraded event' },
    );
    expect(JSON.parse(degraded).message).toMatch(
      /^pool pool-node-2 on node-2: its disk failed I\/O: EIO: .*; no new replica is placed there while it is Degraded/,
    );
    expect((await c.rest.listPools()).find((p) => p.id === 'pool-node-2')?.state?.status).toBe('Degraded');
    const refused = (await c.rest
      .createVolume(newVolumeId(), { size: 16 * MiB, replicas: 2, thin: true, policy: { self_heal: true } })
      .catch((e: RestError) => e)) as RestError;
    expect(refused.message).toMatch(/pool not online/);

    await disk.heal();
    const volume = await c.volumeWhere(id, (v) => v.state.status === 'Online', {
      what: 'the volume Online again',
      timeoutMs: 30_000,
    });
    const onNode2 = Object.entries(volume.state.replica_topology).find(([, t]) => t.node === 'node-2')!;
    const file = join(c.dir, 'node-2', 'pool', 'replicas', `${onNode2[0]}.img`);
    // Its disk, past the page cache: what the flushes acknowledged.
    const { stdout } = await exec('dd', [`if=${file}`, 'iflag=direct', 'bs=1M', 'count=8', 'status=none'], {
      encoding: 'buffer',
      maxBuffer: 9 * MiB,
    });
    expect(Array.from({ length: 8 }, (_, i) => stdout[i * MiB])).toEqual([
      ...Array(4).fill(0x32),
      ...Array(4).fill(0x31),
    ]);
  }, 90_000);
});
