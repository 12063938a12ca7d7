import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Replica } from '../../../src/lib/io-engine/client.js';
import { waitFor } from '../../helpers/wait.js';
import { type RunningEngine, replicaFile, startEngine } from './engines.js';
import { type FailingDisk, mountFailingDisk } from './failing-disk.js';
import { execFileP, run } from './nbd-tools.js';

const MiB = 1024 * 1024;
const SIZE = 32 * MiB;

/** The first byte of each MiB of the first `mib` MiB of a file, as its disk holds it (O_DIRECT: past the page cache). */
async function onDisk(file: string, mib: number): Promise<number[]> {
  const { stdout } = await execFileP(
    'dd',
    [`if=${file}`, 'iflag=direct', 'bs=1M', `count=${mib}`, 'status=none'],
    {
      encoding: 'buffer',
      maxBuffer: (mib + 1) * MiB,
    },
  );
  return Array.from({ length: mib }, (_, i) => stdout[i * MiB]);
}

/**
 * A child whose disk fails a flush is faulted while the nexus answers the flush from its other
 * child. Its file may still serve the writes from before the flush out of the page cache, but its
 * disk does not hold them (a failed writeback is not retried). When the child comes back, the
 * partial rebuild must copy those writes too, not only the ones it missed after the fault: else the
 * child is Online and healthy with old data on disk, found only once the cache is dropped (a
 * reboot), and served as the volume's data if the other child is lost.
 */
describe('a child whose disk fails a flush', () => {
  let dir: string;
  let a: RunningEngine; // the nexus, with a local child on a healthy pool
  let b: RunningEngine; // the remote child, whose pool is on the failing disk
  let disk: FailingDisk;
  let remote: Replica;
  let nexusUuid: string;
  let target: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-flush-'));
    [a, b] = await Promise.all([startEngine(dir, 'node-a'), startEngine(dir, 'node-b')]);
    disk = await mountFailingDisk(join(dir, 'disk'), join(b.poolDir, 'pb'));
    await a.client.createPool({ name: 'pa', capacity: 128 * MiB });
    await b.client.createPool({ name: 'pb', capacity: 128 * MiB });
    const local = await a.client.createReplica({ uuid: randomUUID(), pool: 'pa', size: SIZE, thin: false });
    remote = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: SIZE,
      thin: false,
      share: 'nbd',
    });
    nexusUuid = randomUUID();
    await a.client.createNexus({
      uuid: nexusUuid,
      size: SIZE,
      children: [local.uri, remote.uri],
      volumeId: randomUUID(),
    });
    target = (await a.client.publishNexus(nexusUuid)).deviceUri;
  }, 60_000);

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await disk?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  // Without FUA (cache=writeback), as a filesystem writes: the data is made durable by flushes.
  const io = (...cmds: string[]) =>
    run('qemu-io', ['-f', 'raw', '-t', 'writeback', ...cmds.flatMap((c) => ['-c', c]), target]);
  const remoteChild = async () =>
    (await a.client.getNexus(nexusUuid)).children.find((c) => c.uuid === remote.uuid);
  const childState = async () => (await remoteChild())?.state;
  /** Added again as core does within the faulted-child wait period (a partial rebuild). */
  const addBack = async (outcome: 'Online' | 'Faulted') => {
    await a.client.addChildNexus(nexusUuid, remote.uri);
    await waitFor(
      async () => {
        const c = await remoteChild();
        if (c?.state === outcome) return true;
        // Retried; the last one is what a timeout reports: where the rebuild stands, and why.
        throw new Error(
          `not yet: ${JSON.stringify(c && { state: c.state, reason: c.reason, progress: c.rebuildProgress, ended: c.rebuildEndedAt })}`,
        );
      },
      { what: `the child ${outcome} after its rebuild` },
    );
  };

  it('is rebuilt with the writes that flush did not make durable on it', async () => {
    await io('write -P 0xaa 0 8M', 'flush');
    await disk.fail();
    await io('write -P 0xbb 0 4M', 'flush');
    await disk.heal();
    expect(await childState()).toBe('Faulted');
    // The pool says its disk failed, and for how long it stays Degraded.
    expect(await b.client.getPool('pb')).toMatchObject({
      state: 'Degraded',
      stateReason: expect.stringMatching(
        /^its disk failed I\/O: EIO: .*\(\d+ s ago\); Degraded until 10 min pass/,
      ),
    });
    await addBack('Online');
    // What its disk holds, past its page cache: the flushed data, 0xbb then 0xaa.
    expect(await onDisk(replicaFile(b, 'pb', remote), 8)).toEqual([
      ...Array(4).fill(0xbb),
      ...Array(4).fill(0xaa),
    ]);
  }, 60_000);

  it("is rebuilt again with what a rebuild copied when the rebuild's own last flush fails", async () => {
    await io('write -P 0xcc 0 4M', 'flush');
    await disk.fail();
    await io('write -P 0xdd 0 2M', 'flush');
    expect(await childState()).toBe('Faulted');
    // Added back while its disk still fails: the copies land in its page cache, the last flush fails.
    await addBack('Faulted');
    await disk.heal();
    await addBack('Online');
    expect(await onDisk(replicaFile(b, 'pb', remote), 8)).toEqual([
      ...Array(2).fill(0xdd),
      ...Array(2).fill(0xcc),
      ...Array(4).fill(0xaa),
    ]);
  }, 60_000);

  /** A metadata change committed while the disk fails aborts ext4's journal: read-only from then on. */
  const abortPoolJournal = async () => {
    await disk.fail();
    await writeFile(join(b.poolDir, 'pb', 'dirty'), 'x').catch(() => {});
    await run('sync', ['-f', join(b.poolDir, 'pb')]).catch(() => {});
    await expect(writeFile(join(b.poolDir, 'pb', 'probe'), 'x')).rejects.toThrow(/EROFS/);
  };

  it('faults a remote child whose pool went read-only and serves on from the other one', async () => {
    await abortPoolJournal();
    await disk.heal(); // the filesystem stays read-only
    // The replica's EROFS is a failed disk (EIO) on the wire, not EPERM: that is what a replica held by
    // a newer nexus answers, and a nexus that reads it shuts itself down (fenced), target and all.
    await io('write -P 0xee 0 1M', 'flush');
    expect(await remoteChild()).toMatchObject({
      state: 'Faulted',
      reason: expect.stringMatching(/remote error EIO/),
    });
    await io('read -P 0xee 0 1M', 'write -P 0xef 1M 1M', 'flush', 'read -P 0xef 1M 1M');
  }, 60_000);

  it('lets its io-engine stop when the filesystem went read-only under the pool', async () => {
    await abortPoolJournal();
    // Its pool's claim cannot be released; the rest still stops and the process exits, saying so.
    expect(await b.proc.kill('SIGTERM')).toBe(1);
    expect(b.proc.output).toMatch(/"stop failed".*EROFS|EROFS.*"stop failed"/);
  }, 60_000);
});
