import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Replica } from '../../../src/lib/io-engine/client.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { withUnusedPorts } from '../../helpers/ports.js';
import { waitFor } from '../../helpers/wait.js';
import { code, type RunningEngine, replicaFile, startEngine } from './engines.js';
import { qemuIo } from './nbd-tools.js';

const MiB = 1024 * 1024;
const SIZE = 16 * MiB;
const sha = (b: Buffer) => createHash('sha256').update(b.subarray(0, SIZE)).digest('hex');

/**
 * A remote child whose io-engine cannot be reached: down, hung, or cut off by the network. A nexus
 * created then (a publish, an HA switchover, a target recreated after a restart) comes up from the
 * children it can reach, with that one Faulted and why, rather than leave the volume without a
 * target; a running nexus faults it within its keep-alive, not after the 30 s request timeout.
 */
describe('a remote child that cannot be reached', () => {
  let dir: string;
  let store: Store;
  let a: RunningEngine; // the nexus's node, with the local child
  let b: RunningEngine; // the remote child's node, down when the nexus is created
  let nbdPort: number;
  let local: Replica;
  let remote: Replica;
  const nexusUuid = randomUUID();
  const volume = randomUUID();
  let infoKey = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-unreachable-'));
    a = await startEngine(dir, 'node-a');
    // b keeps its NBD port across its restart, so the child URI stays valid.
    b = await withUnusedPorts(1, async ([port]) => {
      nbdPort = port;
      return startEngine(dir, 'node-b', { nbdPort: port });
    });
    await a.client.createPool({ name: 'pa', capacity: 64 * MiB });
    await b.client.createPool({ name: 'pb', capacity: 64 * MiB });
    local = await a.client.createReplica({ uuid: randomUUID(), pool: 'pa', size: SIZE, thin: true });
    remote = await b.client.createReplica({
      uuid: randomUUID(),
      pool: 'pb',
      size: SIZE,
      thin: true,
      share: 'nbd',
    });
    store = await openStore(`sqlite:${join(dir, 'store.db')}`);
  });

  afterAll(async () => {
    for (const e of [a, b]) await e?.stop('SIGKILL');
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a nexus created without it comes up Degraded with the child Faulted, serves, and takes it back with a full rebuild', async () => {
    await b.stop('SIGKILL');
    // With no child to serve from, the create is still refused, and says why.
    expect(
      await code(
        a.client.createNexus({
          uuid: randomUUID(),
          size: SIZE,
          children: [remote.uri],
          volumeId: randomUUID(),
        }),
      ),
    ).toMatch(/^FAILED_PRECONDITION: cannot open child '.*' of nexus .*ECONNREFUSED/);

    const n = await a.client.createNexus({
      uuid: nexusUuid,
      size: SIZE,
      children: [local.uri, remote.uri],
      volumeId: volume,
    });
    infoKey = n.nexusInfoKey;
    expect(n.state).toBe('Degraded');
    expect(n.children.map((ch) => [ch.uuid, ch.state])).toEqual([
      [local.uuid, 'Online'],
      [remote.uuid, 'Faulted'],
    ]);
    expect(n.children[1].reason).toMatch(/cannot open child .*ECONNREFUSED/);
    // Recorded as missing the writes from now on: never taken for up to date.
    expect(JSON.parse((await store.get(infoKey))!.value).children).toEqual([
      { healthy: true, uuid: local.uuid },
      { healthy: false, uuid: remote.uuid },
    ]);
    const target = (await a.client.publishNexus(nexusUuid)).deviceUri;
    await qemuIo(target, ['write -P 0x5e 0 8M', 'read -P 0x5e 0 8M']);

    // Its node is back: the child is added again and rebuilt in full.
    b = await startEngine(dir, 'node-b', { nbdPort });
    await b.client.importPool({ name: 'pb' });
    const added = await a.client.addChildNexus(nexusUuid, remote.uri);
    expect(added.children.find((ch) => ch.uuid === remote.uuid)?.state).toBe('Degraded');
    await waitFor(async () => (await a.client.getNexus(nexusUuid)).state === 'Online', {
      what: 'the returned child rebuilt',
    });
    const rebuilt = (await a.client.getNexus(nexusUuid)).children.find((ch) => ch.uuid === remote.uuid)!;
    expect(rebuilt.rebuildPartial).toBe(false);
    expect(sha(await readFile(replicaFile(b, 'pb', remote)))).toBe(
      sha(await readFile(replicaFile(a, 'pa', local))),
    );
  });

  it('after an unclean shutdown, another healthy child is the source of the new nexus when the first cannot be reached', async () => {
    await a.stop('SIGKILL');
    const info = JSON.parse((await store.get(infoKey))!.value);
    expect(info).toMatchObject({ clean_shutdown: false });
    expect(info.children.every((c: { healthy: boolean }) => c.healthy)).toBe(true);
    await b.stop('SIGKILL');
    a = await startEngine(dir, 'node-a');
    await a.client.importPool({ name: 'pa' });
    // The remote child comes first: it would be the source, the local one rebuilt from it.
    const n = await a.client.createNexus({
      uuid: nexusUuid,
      size: SIZE,
      children: [remote.uri, local.uri],
      volumeId: volume,
    });
    expect(n.children.map((ch) => [ch.uuid, ch.state])).toEqual([
      [remote.uuid, 'Faulted'],
      [local.uuid, 'Online'],
    ]);
    const target = (await a.client.publishNexus(nexusUuid)).deviceUri;
    await qemuIo(target, ['read -P 0x5e 0 8M']);
  });

  it('a remote child whose io-engine stops answering (a cut link, a hung process) is faulted by the keep-alive', async () => {
    b = await startEngine(dir, 'node-b', { nbdPort });
    await b.client.importPool({ name: 'pb' });
    await a.client.addChildNexus(nexusUuid, remote.uri);
    await waitFor(async () => (await a.client.getNexus(nexusUuid)).state === 'Online', {
      what: 'the child back and rebuilt',
    });
    const target = (await a.client.getNexus(nexusUuid)).deviceUri;
    // Frozen, its socket still open: no reset ever comes, only silence.
    b.proc.child.kill('SIGSTOP');
    try {
      await qemuIo(target, ['write -P 0x6f 0 1M', 'read -P 0x6f 0 1M']);
      const child = (await a.client.getNexus(nexusUuid)).children.find((ch) => ch.uuid === remote.uuid)!;
      expect(child.state).toBe('Faulted');
      expect(child.reason).toMatch(/no answer from the server for 10000 ms, a keep-alive probe included/);
    } finally {
      b.proc.child.kill('SIGCONT');
    }
  });
});
