import { describe, expect, it } from 'vitest';
import { currentLeader } from '../../../src/lib/store/election.js';
import type { Store, Watch, WatchEvent } from '../../../src/lib/store/types.js';
import { StoreWorker } from '../../helpers/store-worker-process.js';
import { waitFor } from '../../helpers/wait.js';
import type { ContractContext } from './contract.js';

/** Guarantees across OS processes: CAS counters, kill -9 of a lease holder, reconnecting watches, election. */
export function registerProcessContract(ctx: ContractContext): void {
  describe('several processes', () => {
    const workers: StoreWorker[] = [];
    const worker = (args: string[]) => {
      const w = new StoreWorker(ctx.harness.url(), args);
      workers.push(w);
      return w;
    };
    const stopWorkers = async () => {
      for (const w of workers.splice(0)) await w.kill('SIGKILL');
    };

    it('8 concurrent compare-and-swap writers end with the exact count', async () => {
      try {
        const key = `${ctx.prefix()}counter`;
        const group = Array.from({ length: 8 }, () => worker(['cas-increment', key, '25']));
        await Promise.all(group.map((w) => w.waitForLine(/^ready$/)));
        const t0 = Date.now();
        for (const w of group) w.send('go');
        const codes = await Promise.all(group.map((w) => w.wait()));
        const elapsed = Date.now() - t0;
        expect(codes, group.map((w) => w.stderr).join('\n')).toEqual(Array(8).fill(0));
        const s = await ctx.open();
        const kv = await s.get(key);
        expect(kv?.value).toBe('200');
        expect(kv?.version).toBe(200);
        const conflicts = group.reduce(
          (n, w) => n + Number(w.lines.find((l) => l.startsWith('done'))?.split(' ')[1]),
          0,
        );
        console.log(
          `[${ctx.harness.name}] 8 CAS writers x 25: ${elapsed} ms, ${conflicts} conflicts retried`,
        );
      } finally {
        await stopWorkers();
      }
    }, 120_000);

    it('a lease held by a process killed with kill -9 expires and its keys vanish', async () => {
      try {
        const s = await ctx.open();
        const p = ctx.prefix();
        const holder = worker(['hold-lease', `${p}alive`, '1']);
        const [, leaseId] = await holder.waitForLine(/^ready (\w+)/);
        expect((await s.get(`${p}alive`))?.lease).toBe(leaseId);
        const w = await s.watch(p);
        const events: WatchEvent[] = [];
        w.on('event', (e) => events.push(e));
        await holder.kill('SIGKILL');
        const t0 = Date.now();
        await waitFor(async () => (await s.get(`${p}alive`)) === null, {
          timeoutMs: 10_000,
          what: 'key of the dead holder gone',
        });
        const gone = Date.now() - t0;
        await waitFor(() => events.some((e) => e.type === 'delete'), {
          timeoutMs: 5_000,
          what: 'delete event',
        });
        expect(await s.leaseTimeToLive(leaseId)).toBe(-1);
        console.log(`[${ctx.harness.name}] key of kill -9'd holder (TTL 1 s) gone after ${gone} ms`);
        // The 1 s TTL plus three times the 1 s of detection slack this once allowed.
        expect(gone).toBeLessThan(1_000 + 3 * 1_000);
        await w.close();
      } finally {
        await stopWorkers();
      }
    });

    it('a watch delivers every event exactly once and in order across a reconnect', async () => {
      try {
        const p = ctx.prefix();
        let store: Store = await ctx.open();
        const events: WatchEvent[] = [];
        const attach = (w: Watch) => w.on('event', (e) => events.push(e));
        let watch = await store.watch(p, { fromRevision: (await store.revision()) + 1 });
        attach(watch);
        const writer = worker(['write', p, '60', '10']);
        await writer.waitForLine(/^wrote 20 /);
        if (ctx.harness.restartServer) {
          await ctx.harness.restartServer(); // the watch must reconnect and resume by itself
        } else {
          const resumeAt = watch.lastRevision + 1;
          await watch.close();
          await store.close();
          store = await ctx.open();
          watch = await store.watch(p, { fromRevision: resumeAt });
          attach(watch);
        }
        await writer.waitForLine(/^done$/, 60_000);
        await waitFor(() => events.length >= 60, { timeoutMs: 20_000, what: '60 events' });
        expect(events.length).toBe(60);
        const keys = events.map((e) => (e.type === 'put' ? e.kv.key : `delete ${e.key}`));
        expect(keys).toEqual(Array.from({ length: 60 }, (_, i) => `${p}${String(i).padStart(4, '0')}`));
        const revs = events.map((e) => (e.type === 'put' ? e.kv.modRevision : e.modRevision));
        expect(revs).toEqual([...revs].sort((a, b) => a - b));
        const stored = (await store.range(p)).kvs.map((kv) => kv.modRevision);
        expect(revs).toEqual(stored);
        await watch.close();
      } finally {
        await stopWorkers();
      }
    }, 120_000);

    it('a writer killed with kill -9 mid-stream leaves a consistent store', async () => {
      try {
        const s = await ctx.open();
        const p = ctx.prefix();
        const start = (await s.revision()) + 1;
        const writer = worker(['write', p, '100000', '0']);
        await writer.waitForLine(/^wrote 50 /);
        await writer.kill('SIGKILL');
        const { kvs } = await s.range(p);
        expect(kvs.length).toBeGreaterThan(50);
        // sequential writes: exactly the first N keys exist, each with its value
        expect(kvs.map((kv) => kv.value)).toEqual(kvs.map((_, i) => String(i)));
        const w = await s.watch(p, { fromRevision: start });
        const events: WatchEvent[] = [];
        w.on('event', (e) => events.push(e));
        await waitFor(() => events.length >= kvs.length, { what: 'history of every write' });
        expect(events.map((e) => (e.type === 'put' ? e.kv.modRevision : -1))).toEqual(
          kvs.map((kv) => kv.modRevision),
        );
        await s.put(`${p}after`, 'still writable');
        await w.close();
      } finally {
        await stopWorkers();
      }
    });

    it('two processes contend for one election: one wins, the other takes over after kill -9', async () => {
      try {
        const s = await ctx.open();
        const name = `${ctx.prefix()}leader`;
        const ttl = 1;
        const a = worker(['campaign', name, 'proc-a', String(ttl)]);
        const b = worker(['campaign', name, 'proc-b', String(ttl)]);
        await Promise.race([a.waitForLine(/^elected/), b.waitForLine(/^elected/)]);
        await waitFor(async () => (await s.range(`${name}/`)).kvs.length === 2, {
          what: 'both contenders registered',
        });
        const [winner, loser] = a.lines.some((l) => l.startsWith('elected')) ? [a, b] : [b, a];
        expect(loser.lines.some((l) => l.startsWith('elected'))).toBe(false);
        const leader = await currentLeader(s, name);
        expect(leader?.value).toBe(winner === a ? 'proc-a' : 'proc-b');
        await winner.kill('SIGKILL');
        const t0 = Date.now();
        await loser.waitForLine(/^elected/, 10_000);
        const takeover = Date.now() - t0;
        console.log(`[${ctx.harness.name}] election takeover after kill -9 (TTL ${ttl} s): ${takeover} ms`);
        // The TTL plus three times the 1 s of slack this once allowed (a slow machine adds only slack).
        expect(takeover).toBeLessThan(ttl * 1000 + 3 * 1_000);
        expect((await currentLeader(s, name))?.value).toBe(winner === a ? 'proc-b' : 'proc-a');
      } finally {
        await stopWorkers();
      }
    }, 60_000);
  });
}
