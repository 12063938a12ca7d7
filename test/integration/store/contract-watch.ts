import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/lib/errors.js';
import type { Watch, WatchEvent } from '../../../src/lib/store/types.js';
import { waitFor } from '../../helpers/wait.js';
import type { ContractContext } from './contract.js';

export function collect(watch: Watch): WatchEvent[] {
  const events: WatchEvent[] = [];
  watch.on('event', (e) => events.push(e));
  return events;
}

export const describeEvent = (e: WatchEvent) =>
  e.type === 'put' ? `put ${e.kv.key}=${e.kv.value}@${e.kv.modRevision}` : `delete ${e.key}@${e.modRevision}`;

/** Prefix watch from a revision: order, prev, resume, compaction. */
export function registerWatchContract(ctx: ContractContext): void {
  describe('watch', () => {
    it('replays puts and deletes from a revision in order, with revisions and prev values', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const r1 = (await s.put(`${p}a`, '1')).revision;
      const r2 = (await s.put(`${p}a`, '2')).revision;
      await s.put(`${p.slice(0, -1)}-other`, 'ignored');
      const r3 = (await s.put(`${p}b`, '3')).revision;
      const r4 = (await s.delete(`${p}a`)).revision;
      const w = await s.watch(p, { fromRevision: r1 });
      const events = collect(w);
      await waitFor(() => events.length >= 4, { what: 'replayed events' });
      expect(events.map(describeEvent)).toEqual([
        `put ${p}a=1@${r1}`,
        `put ${p}a=2@${r2}`,
        `put ${p}b=3@${r3}`,
        `delete ${p}a@${r4}`,
      ]);
      const [first, second, , del] = events;
      expect(first.type === 'put' && first.kv).toMatchObject({ createRevision: r1, version: 1, lease: '0' });
      expect(first.type === 'put' && first.prev).toBeUndefined();
      expect(second.type === 'put' && second.prev).toMatchObject({ value: '1', modRevision: r1, version: 1 });
      expect(del.type === 'delete' && del.prev).toMatchObject({ value: '2', modRevision: r2 });
      expect(w.lastRevision).toBe(r4);

      // live events after the replay
      const r5 = (await s.put(`${p}c`, '5')).revision;
      await waitFor(() => events.length >= 5, { what: 'live event' });
      expect(describeEvent(events[4])).toBe(`put ${p}c=5@${r5}`);
      await w.close();
    });

    it('without a revision delivers only later events, including those of other clients', async () => {
      const s = await ctx.open();
      const writer = await ctx.open();
      const p = ctx.prefix();
      await writer.put(`${p}before`, 'x');
      const w = await s.watch(p);
      const events = collect(w);
      const r = (await writer.put(`${p}after`, 'y')).revision;
      await waitFor(() => events.length >= 1, { what: 'event from the other client' });
      expect(events.map(describeEvent)).toEqual([`put ${p}after=y@${r}`]);
      await w.close();
    });

    it('resumes from lastRevision + 1 with nothing lost or repeated', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const start = (await s.revision()) + 1;
      for (let i = 0; i < 5; i++) await s.put(`${p}${i}`, String(i));
      const w1 = await s.watch(p, { fromRevision: start });
      const first: WatchEvent[] = [];
      await new Promise<void>((resolve) => {
        w1.on('event', (e) => {
          first.push(e);
          if (first.length === 2) {
            void w1.close(); // no event is delivered after close()
            resolve();
          }
        });
      });
      await w1.close();
      const resumeAt = first[1].type === 'put' ? first[1].kv.modRevision + 1 : 0;
      expect(w1.lastRevision + 1).toBe(resumeAt);
      for (let i = 5; i < 8; i++) await s.put(`${p}${i}`, String(i));
      const w2 = await s.watch(p, { fromRevision: w1.lastRevision + 1 });
      const rest = collect(w2);
      await waitFor(() => rest.length >= 6, { what: 'resumed events' });
      const values = [...first.slice(0, 2), ...rest].map((e) => (e.type === 'put' ? e.kv.value : 'delete'));
      expect(values).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
      await w2.close();
    });

    it('reports compaction when the start revision was compacted away', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const old = (await s.put(`${p}k`, '1')).revision;
      const keep = (await s.put(`${p}k`, '2')).revision;
      await s.compact(keep);
      await s.compact(old); // compacting to an older point again is harmless
      const w = await s.watch(p, { fromRevision: old });
      const compacted = new Promise<number>((resolve) => w.on('compacted', resolve));
      expect(await compacted).toBe(keep);
      // from the compaction point itself history is intact
      const w2 = await s.watch(p, { fromRevision: keep });
      const events = collect(w2);
      await waitFor(() => events.length >= 1, { what: 'event at the compaction revision' });
      expect(describeEvent(events[0])).toBe(`put ${p}k=2@${keep}`);
      await w2.close();
      await expect(s.compact((await s.revision()) + 100)).rejects.toBeInstanceOf(UsageError);
    });

    it('delivers the delete events of an expired lease', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const lease = await s.grantLease(1, { keepAlive: false });
      await lease.put(`${p}x`, '1');
      const w = await s.watch(p);
      const events = collect(w);
      await waitFor(() => events.length >= 1, { timeoutMs: 5_000, what: 'lease expiry delete event' });
      expect(events[0]).toMatchObject({ type: 'delete', key: `${p}x` });
      await w.close();
    });
  });
}
