import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Nexus, Replica } from '../../../src/lib/io-engine/client.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { waitFor } from '../../helpers/wait.js';
import { CLUSTER_ID, type RunningEngine, startEngine } from './engines.js';
import { qemuIo, run, startTool } from './nbd-tools.js';

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('data through a 3-child nexus with real clients', () => {
  let dir: string;
  let a: RunningEngine;
  let b: RunningEngine;
  let replicas: Replica[];
  let nexus: Nexus;

  const childFile = (r: Replica) =>
    join(r.pool === 'pa' ? a.poolDir : b.poolDir, r.pool, 'replicas', `${r.uuid}.img`);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-data-'));
    [a, b] = await Promise.all([startEngine(dir, 'node-a'), startEngine(dir, 'node-b')]);
    await a.client.createPool({ name: 'pa', capacity: 512 * MiB });
    await b.client.createPool({ name: 'pb', capacity: 512 * MiB });
    const local = await a.client.createReplica({ uuid: randomUUID(), pool: 'pa', size: SIZE, thin: true });
    const r1 = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: SIZE,
      thin: true,
      share: 'nbd',
    });
    const r2 = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: SIZE,
      thin: true,
      share: 'nbd',
    });
    replicas = [local, r1, r2];
    await a.client
      .createNexus({
        uuid: randomUUID(),
        size: SIZE,
        children: replicas.map((r) => r.uri),
        volumeId: randomUUID(),
      })
      .then((n) => {
        nexus = n;
      });
    nexus = await a.client.publishNexus(nexus.uuid);
  });

  afterAll(async () => {
    await a?.stop('SIGKILL');
    await b?.stop('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('qemu-io patterns land identically on every child, local and remote', async () => {
    expect(nexus.children.map((c) => c.state)).toEqual(['Online', 'Online', 'Online']);
    expect(nexus.children[1].uri).toMatch(new RegExp(`^nbd://${b.nbdEndpoint}/`));
    await qemuIo(nexus.deviceUri, [
      'write -P 0x11 0 4M',
      'write -P 0x22 4M 1M',
      'write -z 5M 1M',
      'write -f -P 0x33 6M 64k',
      'aio_write -P 0x44 8M 1M',
      'aio_write -P 0x55 9M 1M',
      'aio_write -P 0x66 10M 1M',
      'aio_flush',
      'write -P 0x77 63M 1M',
      'discard 12M 1M',
      'flush',
    ]);
    await qemuIo(nexus.deviceUri, [
      'read -P 0x11 0 4M',
      'read -P 0x22 4M 1M',
      'read -P 0 5M 1M',
      'read -P 0x33 6M 64k',
      'read -P 0x44 8M 1M',
      'read -P 0x55 9M 1M',
      'read -P 0x66 10M 1M',
      'read -P 0x77 63M 1M',
    ]);
    const hashes = await Promise.all(replicas.map(async (r) => sha(await readFile(childFile(r)))));
    expect(new Set(hashes).size).toBe(1);
    const n = await a.client.getNexus(nexus.uuid);
    expect(n.state).toBe('Online');
  });

  it('nbdcopy of the whole volume matches the children; several clients at once', async () => {
    await Promise.all(
      [0, 1, 2].map((i) => qemuIo(nexus.deviceUri, [`write -P ${0xa0 + i} ${20 + i * 2}M 2M`])),
    );
    const src = join(dir, 'src.img');
    await writeFile(src, Buffer.alloc(0));
    await run('qemu-img', ['create', '-f', 'raw', src, String(SIZE)]);
    await run('qemu-io', ['-f', 'raw', '-c', 'write -P 0x5c 30M 8M', src]);
    const srcBytes = await readFile(src);
    await run('nbdcopy', [src, nexus.deviceUri]);
    const back = join(dir, 'back.img');
    await run('nbdcopy', [nexus.deviceUri, back]);
    const backBytes = await readFile(back);
    expect(sha(backBytes)).toBe(sha(srcBytes));
    for (const r of replicas) expect(sha(await readFile(childFile(r)))).toBe(sha(srcBytes));
  });

  it('a target works as a block device: nbdfuse + loop + mkfs.ext4 + mount', async () => {
    const fuseDir = join(dir, 'fuse');
    const mnt = join(dir, 'mnt');
    await mkdir(fuseDir);
    await mkdir(mnt);
    const fuse = startTool('nbdfuse', [join(fuseDir, 'nbd'), nexus.deviceUri]);
    let loop = '';
    let mounted = false;
    try {
      await waitFor(
        async () => {
          await fuse.failIfExited();
          return (await run('ls', [fuseDir])).includes('nbd');
        },
        { what: 'nbdfuse file' },
      );
      loop = (await run('losetup', ['-f', '--show', join(fuseDir, 'nbd')])).trim();
      await run('mkfs.ext4', ['-q', '-F', loop]);
      await run('mount', [loop, mnt]);
      mounted = true;
      const payload = randomUUID().repeat(1000);
      await writeFile(join(mnt, 'hello.txt'), payload);
      // This filesystem only: a sync of every filesystem also commits the journals of other tests'
      // (flush-error.test.ts's, while its disk fails: the journal aborts and that pool goes read-only).
      await run('sync', ['-f', join(mnt, 'hello.txt')]);
      await run('umount', [mnt]);
      mounted = false;
      await run('mount', [loop, mnt]);
      mounted = true;
      expect(await readFile(join(mnt, 'hello.txt'), 'utf8')).toBe(payload);
    } finally {
      if (mounted) await run('umount', [mnt]).catch(() => {});
      if (loop) await run('losetup', ['-d', loop]).catch(() => {});
      await run('fusermount3', ['-u', fuseDir]).catch(() => {});
      fuse.kill();
    }
    // After the filesystem traffic every child still holds the same bytes.
    const hashes = await Promise.all(replicas.map(async (r) => sha(await readFile(childFile(r)))));
    expect(new Set(hashes).size).toBe(1);
  });

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
