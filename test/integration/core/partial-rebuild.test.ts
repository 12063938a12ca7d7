import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import type { RebuildHistory, Volume } from '../../../src/lib/rest/types.js';
import { runStorctl } from '../../helpers/storctl.js';
import { fatal, waitFor } from '../../helpers/wait.js';
import { FAST_CORE_FLAGS, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const MiB = 1 << 20;
const SIZE = 64 * MiB;
const PIECE = 256 * 1024;
/** The background writer stays within the first 8 MiB: a partial rebuild copies at most that. */
const PIECES = 32;

/** FAST_CORE_FLAGS with these flags' values replaced. */
const flagsWith = (over: Record<string, string>) => FAST_CORE_FLAGS.map((f, i, a) => over[a[i - 1]] ?? f);

const replicaIds = (v: Volume) => Object.keys(v.state.replica_topology).sort();
const replicaNodeOf = (v: Volume, uuid: string) => v.state.replica_topology[uuid]?.node;
const childOf = (v: Volume, uuid: string) => v.state.target?.children.find((ch) => ch.uri.includes(uuid));

/** sha256 of a replica's first SIZE bytes (a thin replica's file may be shorter: zeros). */
async function replicaHash(c: TestCluster, node: string, uuid: string): Promise<string> {
  const f = await open(join(c.dir, node, 'pool', 'replicas', `${uuid}.img`), 'r');
  try {
    const buf = Buffer.alloc(SIZE);
    let at = 0;
    while (at < SIZE) {
      const { bytesRead } = await f.read(buf, at, SIZE - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return createHash('sha256').update(buf).digest('hex');
  } finally {
    await f.close();
  }
}

/**
 * Writes one PIECE after another over the first PIECES pieces until stopped, each with its own
 * pattern; `last` keeps what each piece must read back. A write that fails fails the test.
 */
function backgroundWriter(uri: string) {
  const last = new Map<number, number>();
  let stop = false;
  let written = 0;
  let error: Error | null = null;
  const done = (async () => {
    for (let i = 0; !stop; i++) {
      const piece = i % PIECES;
      const pattern = (i % 250) + 1;
      await qemuIo(uri, `write -P ${pattern} ${piece * PIECE} ${PIECE}`);
      last.set(piece, pattern);
      written++;
    }
  })().catch((err: Error) => {
    error = err;
  });
  return {
    /** Writes done so far (a failed write ends the wait on it at once). */
    get written() {
      if (error) fatal(`background write failed: ${error.message}`);
      return written;
    },
    async stop() {
      stop = true;
      await done;
      if (error) throw error;
    },
    reads: () => [...last].map(([piece, p]) => `read -P ${p} ${piece * PIECE} ${PIECE}`),
  };
}

/** kill -9 of the io-engine of a replica away from the target's node-1: that node and its replica. */
async function killRemoteHolder(
  c: TestCluster,
  published: Volume,
): Promise<{ gone: string; victim: string }> {
  const gone = Object.values(published.state.replica_topology)
    .map((r) => r.node!)
    .find((n) => n !== 'node-1')!;
  const victim = replicaIds(published).find((r) => replicaNodeOf(published, r) === gone)!;
  const engine = c.engine(gone);
  engine.proc.child.kill('SIGKILL');
  await engine.proc.wait();
  return { gone, victim };
}

describe('core waits for a faulted child and brings the same replica back (partial rebuild)', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  /** A 3-replica self-healing volume of SIZE published on node-1, written in full once. */
  async function publishedVolume(c: TestCluster) {
    const id = newVolumeId();
    await c.rest.createVolume(id, { size: SIZE, replicas: 3, thin: true, policy: { self_heal: true } });
    const v = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
    const uri = v.state.target!.deviceUri;
    await qemuIo(uri, `write -P 0x11 0 ${SIZE}`);
    return { id, v, uri };
  }

  it('kill -9 of a remote child’s io-engine, restart within the wait: same replica, partial rebuild, replicas identical', async () => {
    // The node deadline far beyond the test: only the faulted-child wait can bring the child back.
    const flags = flagsWith({ '--faulted-child-wait-period': '60s', '--node-deadline': '600s' });
    cluster = await TestCluster.start({ engines: 3, coreFlags: flags });
    const c = cluster;
    const { id, v: published, uri } = await publishedVolume(c);
    const victim = replicaIds(published).find((r) => replicaNodeOf(published, r) === 'node-2')!;
    expect(victim).toBeTruthy();

    const writer = backgroundWriter(uri);
    try {
      await waitFor(() => writer.written >= 5, { what: 'writes under way', timeoutMs: 15_000 });
      const engine = c.engine('node-2');
      engine.proc.child.kill('SIGKILL');
      await engine.proc.wait();
      // The writes go on and fault the child; the volume is Degraded, the replica kept.
      const faulted = await waitFor(
        async () => {
          const v = await c.rest.getVolume(id);
          return childOf(v, victim)?.state === 'Faulted' && v.state.status === 'Degraded' ? v : null;
        },
        { what: 'child of the killed io-engine Faulted, volume Degraded', timeoutMs: 15_000 },
      );
      expect(replicaIds(faulted)).toEqual(replicaIds(published));
      const before = writer.written;
      await waitFor(() => writer.written >= before + 10, { what: 'writes while the child is away' });
      // Still waited for: neither removed nor replaced.
      expect(replicaIds(await c.rest.getVolume(id))).toEqual(replicaIds(published));

      await c.startEngine('node-2', { grpc: engine.grpc, nbd: engine.nbd });
      await c.volumeWhere(
        id,
        (v) =>
          v.state.status === 'Online' &&
          v.state.target?.children.length === 3 &&
          v.state.target.children.every((ch) => ch.state === 'Online'),
        { what: 'volume Online with its three children', timeoutMs: 45_000, intervalMs: 200 },
      );
    } finally {
      await writer.stop();
    }

    const healed = await c.rest.getVolume(id);
    expect(healed.state.status).toBe('Online');
    // The same replicas: the faulted one came back, none was replaced.
    expect(replicaIds(healed)).toEqual(replicaIds(published));
    expect(healed.state.target!.deviceUri).toBe(uri);

    const history = await c.rest.call<RebuildHistory>('GET', `/volumes/${id}/rebuild-history`);
    const rebuilds = history.records.filter((r) => r.childUri.includes(victim));
    expect(rebuilds.length).toBeGreaterThan(0);
    const last = rebuilds.at(-1)!;
    expect(last.rebuildJobState).toBe('Completed');
    expect(last.isPartial).toBe(true);
    // Only what was written while it was away (within the first 8 MiB) was copied.
    expect(last.blocksTransferred).toBeGreaterThan(0);
    expect(last.blocksTransferred * last.blockSize).toBeLessThanOrEqual(8 * MiB);
    expect(last.blocksTotal * last.blockSize).toBe(SIZE);
    // The operator's view names the replicas by uuid, as kubectl-mayastor does, with its columns.
    const table = await runStorctl(['volume', 'rebuild-history', id], { env: c.env });
    expect(table.code, table.stderr).toBe(0);
    const [header, ...rows] = table.stdout.trim().split('\n');
    expect(header.trim().split(/\s+/)).toEqual([
      'DST',
      'SRC',
      'STATE',
      'TOTAL',
      'RECOVERED',
      'TRANSFERRED',
      'IS-PARTIAL',
      'START-TIME',
      'END-TIME',
    ]);
    const row = rows.map((r) => r.trim().split(/\s+/)).findLast((r) => r[0] === victim);
    expect(row?.slice(2, 4)).toEqual(['Completed', '64MiB']);
    expect(replicaIds(healed)).toContain(row?.[1]);
    expect(row?.[6]).toBe('true');
    expect(row?.[8]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // Reads check the latest pattern of every piece, and the untouched rest.
    await qemuIo(uri, ...writer.reads(), `read -P 0x11 ${PIECES * PIECE} ${SIZE - PIECES * PIECE}`);
    const hashes = await Promise.all(
      replicaIds(healed).map((r) => replicaHash(c, replicaNodeOf(healed, r)!, r)),
    );
    expect(new Set(hashes).size).toBe(1);

    const events = (await c.events()).join('\n');
    expect(events).toMatch(new RegExp(`"Rebuilding".*${victim}.*wait period`));
    expect(events).not.toMatch(new RegExp(`"id":"${victim}","action":"Removed"`));
    expect(events).not.toContain('"Healing"');
    // The rebuild's end is an event of the volume too, closing the Rebuilding one.
    expect(events).toMatch(
      new RegExp(
        `"id":"${id}","action":"Rebuilt","message":"replica ${victim} rebuilt from [0-9a-f-]{36}: .* written, partial rebuild`,
      ),
    );
  }, 150_000);

  it('a node not back within the wait period: its faulted child is replaced by a new replica', async () => {
    const flags = flagsWith({ '--faulted-child-wait-period': '2s', '--node-deadline': '600s' });
    cluster = await TestCluster.start({ engines: 4, coreFlags: flags });
    const c = cluster;
    const { id, v: published, uri } = await publishedVolume(c);
    const holders = Object.values(published.state.replica_topology).map((r) => r.node!);
    const spare = c.engines.map((e) => e.node).find((n) => !holders.includes(n))!;
    const { victim } = await killRemoteHolder(c, published);
    await qemuIo(uri, 'write -P 0x22 0 4M');

    const healed = await c.volumeWhere(
      id,
      (v) =>
        v.state.status === 'Online' &&
        !replicaIds(v).includes(victim) &&
        replicaIds(v).length === 3 &&
        v.state.target?.children.every((ch) => ch.state === 'Online') === true,
      { what: 'volume Online with the faulted replica replaced', timeoutMs: 45_000, intervalMs: 250 },
    );
    const replacement = replicaIds(healed).find((r) => !replicaIds(published).includes(r))!;
    expect(replicaNodeOf(healed, replacement)).toBe(spare);
    await qemuIo(uri, 'read -P 0x22 0 4M', `read -P 0x11 4M ${SIZE - 4 * MiB}`);
    const events = (await c.events()).join('\n');
    // Replaced by the wait period's end (the 600 s node deadline never came).
    expect(events).toMatch(
      new RegExp(`"id":"${victim}","action":"Removed".*not back within the faulted-child wait period`),
    );
    expect(events).toContain('"Healing"');
  }, 120_000);

  it('a restarted core times the wait from the io-engine’s fault time, not from its own start', async () => {
    // The first core would wait an hour; the second waits 2 s, counted from the fault.
    cluster = await TestCluster.start({
      engines: 4,
      coreFlags: flagsWith({ '--faulted-child-wait-period': '1h', '--node-deadline': '600s' }),
    });
    const c = cluster;
    const { id, v: published } = await publishedVolume(c);
    const { gone, victim } = await killRemoteHolder(c, published);
    await waitFor(async () => childOf(await c.rest.getVolume(id), victim)?.state === 'Faulted', {
      what: 'the child of the killed io-engine Faulted',
      timeoutMs: 15_000,
    });
    // The nexus's io-engine reports when it faulted the child.
    const nexusEngine = new IoEngineClient(c.engine('node-1').grpc);
    const nexusId = published.state.target!.uuid;
    const child = (await nexusEngine.getNexus(nexusId)).children.find((ch) => ch.uri.includes(victim))!;
    const faultedAt = child.faultedAt!;
    nexusEngine.close();
    expect(faultedAt).toBeGreaterThan(0);
    expect(faultedAt).toBeLessThanOrEqual(Date.now());
    // Still waited for an hour by the first core: the replica is kept, and an event says until when.
    expect(replicaIds(await c.rest.getVolume(id))).toContain(victim);
    const iso = (ms: number) => new Date(ms).toISOString();
    await waitFor(
      async () =>
        (await c.events()).some(
          (e) =>
            e.includes('"WaitingForChild"') &&
            e.includes(
              `replica ${victim} on ${gone}: nexus child faulted at ${iso(faultedAt)} (${child.reason}); waiting until ${iso(faultedAt + 3_600_000)}`,
            ),
        ),
      { what: 'an event saying the faulted child is waited for, and until when' },
    );

    expect(await c.cores[0].kill('SIGTERM')).toBe(0);
    await c.startCore(flagsWith({ '--faulted-child-wait-period': '2s', '--node-deadline': '600s' }));
    await waitFor(async () => !replicaIds(await c.rest.getVolume(id)).includes(victim), {
      what: 'the faulted replica replaced by the restarted core',
      timeoutMs: 30_000,
    });
    // Its event names the io-engine's fault time, which predates this core.
    const events = (await c.events()).join('\n');
    expect(events).toMatch(
      new RegExp(
        `"id":"${victim}","action":"Removed".*faulted at ${iso(faultedAt)} \\(.+\\) and not back within the faulted-child wait period`,
      ),
    );
  }, 120_000);

  it('a child that keeps faulting is added back a bounded number of times, then replaced', async () => {
    const flags = flagsWith({ '--faulted-child-wait-period': '60s', '--node-deadline': '600s' });
    cluster = await TestCluster.start({ engines: 3, coreFlags: flags });
    const c = cluster;
    const { id, v: published } = await publishedVolume(c);
    const victim = replicaIds(published).find((r) => replicaNodeOf(published, r) === 'node-2')!;
    const grpc = new IoEngineClient(c.engine('node-1').grpc);
    try {
      let returns = 0;
      const removed = new RegExp(`"id":"${victim}","action":"Removed"`);
      const returnsSeen = (events: string[]) =>
        events.filter((l) => l.includes('"Rebuilding"') && l.includes(victim)).length;
      for (;;) {
        const n = (await grpc.listNexuses()).find((x) => x.volumeId === id)!;
        const child = n.children.find((ch) => ch.uri.includes(victim))!;
        await grpc.faultNexusChild(n.uuid, child.uri);
        // Either added back (one more Rebuilding event naming it) or removed from the volume.
        const outcome = await waitFor(
          async () => {
            const events = await c.events();
            if (removed.test(events.join('\n'))) return 'replaced';
            return returnsSeen(events) > returns ? 'back' : null;
          },
          { what: 'faulted child added back or replaced', timeoutMs: 30_000, intervalMs: 200 },
        );
        if (outcome === 'replaced') break;
        returns++;
        expect(returns).toBeLessThanOrEqual(3);
        // Rebuilt: the same replica Online in the nexus again, before the next fault.
        await waitFor(
          async () => {
            const nx = (await grpc.listNexuses()).find((x) => x.volumeId === id)!;
            return nx.children.find((ch) => ch.uri.includes(victim))?.state === 'Online';
          },
          { what: 'child back Online', timeoutMs: 30_000, intervalMs: 100 },
        );
      }
      expect(returns).toBe(3);
      await waitFor(
        async () => {
          const v = await c.rest.getVolume(id);
          return v.state.status === 'Online' && replicaIds(v).length === 3 && !replicaIds(v).includes(victim);
        },
        { what: 'volume Online with a replacement', timeoutMs: 30_000 },
      );
      const events = (await c.events()).join('\n');
      expect(events).toMatch(new RegExp(`"id":"${victim}","action":"Removed"`));
    } finally {
      grpc.close();
    }
  }, 150_000);

  it('--disable-partial-rebuild: a faulted child on a live node is replaced at once, whatever the wait period', async () => {
    const flags = [
      ...flagsWith({ '--faulted-child-wait-period': '60s', '--node-deadline': '600s' }),
      '--disable-partial-rebuild',
    ];
    cluster = await TestCluster.start({ engines: 3, coreFlags: flags });
    const c = cluster;
    const { id, v: published } = await publishedVolume(c);
    const victim = replicaIds(published).find((r) => replicaNodeOf(published, r) === 'node-2')!;
    const grpc = new IoEngineClient(c.engine('node-1').grpc);
    try {
      const n = (await grpc.listNexuses()).find((x) => x.volumeId === id)!;
      await grpc.faultNexusChild(n.uuid, n.children.find((ch) => ch.uri.includes(victim))!.uri);
    } finally {
      grpc.close();
    }
    const healed = await waitFor(
      async () => {
        const v = await c.rest.getVolume(id);
        return v.state.status === 'Online' && replicaIds(v).length === 3 && !replicaIds(v).includes(victim)
          ? v
          : null;
      },
      { what: 'faulted replica replaced', timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(replicaNodeOf(healed, replicaIds(healed).find((r) => !replicaIds(published).includes(r))!)).toBe(
      'node-2',
    );
    const events = (await c.events()).join('\n');
    expect(events).toMatch(new RegExp(`"id":"${victim}","action":"Removed".*faulted on a live node`));
    expect(events).not.toMatch(new RegExp(`"Rebuilding".*${victim}`));
  }, 120_000);
});
