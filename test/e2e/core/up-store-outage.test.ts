import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestClient } from '../../../src/lib/rest/client.js';
import { openStore } from '../../../src/lib/store/open.js';
import { CsiClient } from '../../helpers/csi-client.js';
import { type EtcdServer, startEtcd } from '../../helpers/etcd.js';
import { withinDeadline } from '../../helpers/fuzz.js';
import type { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { qemuIo } from '../../integration/core/qemu.js';
import { UpHome } from './up-fixture.js';

/**
 * Core's lease TTL under `up` (--lease-ttl). The outages below last three TTLs, so core loses its
 * lease in each and exits, as it must (it may not write without it); with Mayastor's 30 s TTL that
 * is the ~30 s outage of issue 16, shortened here through the TTL so CI runs it.
 */
const LEASE_TTL_S = 3;
const OUTAGE_MS = 3 * LEASE_TTL_S * 1000;
/** One NBD round trip (a write and a read back of 64 KiB) must finish within this, outage or not. */
const IO_DEADLINE_MS = 5_000;

/**
 * `storctl up` on a real etcd that goes away — paused with SIGSTOP, then killed with SIGKILL and
 * started again on the same data: NBD I/O to a published volume goes on throughout (the target lives
 * on the io-engine, which needs no store to move bytes), the io-engines and the S3 mounter keep
 * running (same PIDs, the mounter answers CSI calls), core exits when its lease is lost and is
 * started again once the store is back, and an operation sent into the outage ends committed or
 * rolled back — never left pending.
 */
describe('storctl up through a store outage (etcd paused, then killed and restarted)', () => {
  const cluster = new UpHome();
  let etcd: EtcdServer;
  let up: StorctlProcess;
  const endpoints = () => cluster.endpoints();

  beforeAll(async () => {
    etcd = await startEtcd();
    up = await cluster.start(['--store', etcd.url, '--lease-ttl', String(LEASE_TTL_S)]);
  }, 120_000);
  afterAll(async () => {
    if (etcd) process.kill(etcd.pid, 'SIGCONT');
    await up?.kill('SIGINT');
    await etcd?.stop();
    rmSync(cluster.home, { recursive: true, force: true });
  });

  /** The last lines of a role's log under `up` (a failure's message carries them: the temp dir goes). */
  const logTail = (file: string) => {
    try {
      return readFileSync(join(cluster.home, 'storctl', 'logs', file), 'utf8')
        .split('\n')
        .slice(-30)
        .join('\n');
    } catch (err) {
      return `(${(err as Error).message})`;
    }
  };

  /** Write a fresh pattern and read it back, again and again, until `until` holds; the count. */
  async function ioUntil(
    uri: string,
    until: () => Promise<boolean> | boolean,
    what: string,
  ): Promise<number> {
    let rounds = 0;
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (Date.now() > deadline)
        throw new Error(
          `${what}: not done after 90 s of I/O; up said:\n${up.output.split('\n').slice(-20).join('\n')}\ncore.log ends:\n${logTail('core.log')}`,
        );
      const pattern = `0x${(16 + (rounds % 200)).toString(16)}`;
      const offset = (rounds % 64) * 65536;
      await withinDeadline(
        `NBD write+read #${rounds} (${what})`,
        IO_DEADLINE_MS,
        qemuIo(uri, `write -P ${pattern} ${offset} 64k`, `read -P ${pattern} ${offset} 64k`),
      );
      rounds++;
      if (await until()) return rounds;
    }
  }

  /** Core is back: a REST answer from the core `up` runs now, and the volume Online. */
  const coreBack = async (id: string) => {
    const rest = new RestClient(endpoints().rest);
    try {
      return (await rest.getVolume(id)).state.status === 'Online';
    } catch {
      return false;
    } finally {
      await rest.close();
    }
  };

  /**
   * A create whose intent is in the store when the outage begins: node-3's io-engine (which makes its
   * one replica) is paused until the Create operation is stored, so its commit meets the outage. The
   * answer: a status, or what went wrong.
   */
  async function createIntoOutage(id: string, begin: () => void): Promise<Promise<string>> {
    const node3 = endpoints().roles['io-engine node-3'] as number;
    process.kill(node3, 'SIGSTOP');
    try {
      const answer = fetch(`${endpoints().rest}/v0/volumes/${id}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          size: 4 << 20,
          replicas: 1,
          thin: true,
          policy: { self_heal: true },
          topology: { node_topology: { explicit: { allowed_nodes: ['node-3'] } } },
        }),
        signal: AbortSignal.timeout(60_000),
      }).then(
        (r) => String(r.status),
        (e: Error) => e.message,
      );
      const store = await openStore(etcd.url);
      try {
        await waitFor(
          async () => {
            const { kvs } = await store.range('/openebs.io/mayastor/');
            const kv = kvs.find((k) => k.key.endsWith(`/VolumeSpec/${id}`));
            return kv ? JSON.parse(kv.value).operation?.operation === 'Create' : false;
          },
          { what: 'the create intent stored' },
        );
      } finally {
        await store.close();
      }
      begin();
      return answer;
    } finally {
      process.kill(node3, 'SIGCONT');
    }
  }

  /** After the outage: the volume sent into it is fully created or gone, and nothing is pending. */
  async function settled(id: string): Promise<string> {
    let state = '';
    /** What kept it from settling at the last look (printed if it never does). */
    let holding = 'no answer from core yet';
    await waitFor(
      async () => {
        const rest = new RestClient(endpoints().rest);
        try {
          const all = await rest.listVolumes();
          const busy = all.filter((v) => v.spec.operation);
          holding = busy
            .map((v) => `${v.spec.uuid}: ${JSON.stringify(v.spec.operation)} ${v.state.status}`)
            .join('; ');
          if (busy.length) return false;
          const v = all.find((x) => x.spec.uuid === id);
          state = v ? JSON.stringify(v.spec.status) : 'gone';
          // Finished (Created, Online) or rolled back (Deleting, the garbage collector ends it, or gone).
          return (
            !v || v.spec.status === 'Deleting' || (v.spec.status === 'Created' && v.state.status === 'Online')
          );
        } catch (err) {
          holding = `core: ${(err as Error).message}`;
          return false;
        } finally {
          await rest.close();
        }
      },
      { what: 'the volume created into the outage settled', timeoutMs: 60_000, intervalMs: 500 },
    ).catch((err: Error) => {
      throw new Error(
        `${err.message}; last seen: ${holding || `nothing pending, the volume ${state}`}; up said:\n${up.output.split('\n').slice(-30).join('\n')}\ncore.log ends:\n${logTail('core.log')}`,
      );
    });
    return state;
  }

  it('NBD I/O and the mounter go on through both outages; core comes back each time; nothing stays pending', async () => {
    const rest = new RestClient(endpoints().rest);
    const id = crypto.randomUUID();
    let uri: string;
    try {
      await rest.createVolume(id, {
        size: 16 << 20,
        replicas: 2,
        thin: true,
        policy: { self_heal: true },
        topology: {
          node_topology: { explicit: { allowed_nodes: ['node-1', 'node-2'], preferred_nodes: [] } },
        },
      });
      uri = (await rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' })).state
        .target!.deviceUri!;
    } finally {
      await rest.close();
    }
    await qemuIo(uri, 'write -P 0x5a 4M 1M');
    const before = endpoints().roles as Record<string, number>;
    const mounterSocket = endpoints().mounterSocket as string | null;
    const mounter = mounterSocket ? new CsiClient(mounterSocket) : null;
    const exits = () => up.output.split('core exited').length - 1;
    const restarts = () => up.output.split('core restarted').length - 1;

    for (const kind of ['SIGSTOP', 'SIGKILL'] as const) {
      const exited = exits();
      const restarted = restarts();
      let t0 = 0;
      const pending = crypto.randomUUID();
      const sent = await createIntoOutage(pending, () => {
        t0 = Date.now();
        process.kill(etcd.pid, kind);
      });
      // I/O through the outage, until it has lasted three lease TTLs and core has given its lease up.
      const during = await ioUntil(
        uri,
        async () => {
          if (mounter)
            await withinDeadline(
              'mounter CSI call in the outage',
              IO_DEADLINE_MS,
              mounter.node('NodeGetCapabilities'),
            );
          return Date.now() - t0 >= OUTAGE_MS && exits() > exited;
        },
        `${kind} outage`,
      );
      if (kind === 'SIGSTOP') process.kill(etcd.pid, 'SIGCONT');
      else await etcd.resume();
      // I/O on while core comes back (it waits out the old lease, then loads and reconciles).
      const after = await ioUntil(
        uri,
        async () => restarts() > restarted && (await coreBack(id)),
        `after the ${kind} outage`,
      );
      const answer = await sent;
      const outcome = await settled(pending);
      console.log(
        `[outage ${kind}] ${Date.now() - t0} ms; NBD round trips ${during} during, ${after} after; create sent into it answered ${answer}, ended ${outcome}`,
      );
      expect(during).toBeGreaterThan(0);
      // The io-engines, the CSI plugins, the HA node agent and the mounter served on: never
      // restarted. ha-cluster holds a store lease as core does, and may come back like core.
      const now = endpoints().roles as Record<string, number>;
      for (const role of Object.keys(before).filter((r) => r !== 'core' && r !== 'ha-cluster'))
        expect(now[role], role).toBe(before[role]);
      expect(now.core).not.toBe(before.core);
    }
    mounter?.close();
    console.log(
      `[outage] what up said:\n${up.output
        .split('\n')
        .filter((l) => /core|waiting/.test(l))
        .join('\n')}`,
    );
    // The data written before the outages is intact, and up never stopped.
    await qemuIo(uri, 'read -P 0x5a 4M 1M');
    expect(up.running).toBe(true);
    expect(up.output).not.toMatch(/cannot be started again|unreachable: null/);
    // up said why core exited, and core's log never reads 'unreachable: null'.
    expect(up.output).toContain('core exited (code 128: lost its store lease');
    const coreLog = readFileSync(join(cluster.home, 'storctl', 'logs', 'core.log'), 'utf8');
    expect(coreLog).toContain('lost its store lease');
    expect(coreLog).not.toContain('unreachable: null');
  }, 240_000);
});
