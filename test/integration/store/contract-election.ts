import { describe, expect, it } from 'vitest';
import { campaign, currentLeader } from '../../../src/lib/store/election.js';
import { waitFor } from '../../helpers/wait.js';
import type { ContractContext } from './contract.js';

/** Election within one process (several clients); the kill -9 takeover is in contract-processes. */
export function registerElectionContract(ctx: ContractContext): void {
  describe('election', () => {
    it('exactly one holder; the next contender is elected when the holder resigns', async () => {
      const [a, b, c] = [await ctx.open(), await ctx.open(), await ctx.open()];
      const name = `${ctx.prefix()}election`;
      expect(await currentLeader(a, name)).toBeNull();
      const first = await campaign(a, name, 'node-a', { ttlSeconds: 2 });
      expect(first.key).toBe(`${name}/${first.lease.id}`);
      expect(await currentLeader(c, name)).toEqual({
        key: first.key,
        value: 'node-a',
        lease: first.lease.id,
      });

      let secondElected = false;
      const second = campaign(b, name, 'node-b', { ttlSeconds: 2 }).then((l) => {
        secondElected = true;
        return l;
      });
      // b's key exists and waits behind a's
      await waitFor(async () => (await c.range(`${name}/`)).kvs.length === 2, {
        what: 'second contender key',
      });
      expect(secondElected).toBe(false);
      expect((await currentLeader(c, name))?.value).toBe('node-a');

      await first.resign();
      expect(first.lost.aborted).toBe(true);
      const leader2 = await second;
      expect((await currentLeader(c, name))?.value).toBe('node-b');
      expect(leader2.lost.aborted).toBe(false);
      await leader2.resign();
      expect(await currentLeader(c, name)).toBeNull();
    });

    it('an aborted campaign withdraws its key', async () => {
      const [a, b] = [await ctx.open(), await ctx.open()];
      const name = `${ctx.prefix()}election`;
      const holder = await campaign(a, name, 'a', { ttlSeconds: 2 });
      const abort = new AbortController();
      const waiting = campaign(b, name, 'b', { ttlSeconds: 2, signal: abort.signal });
      await waitFor(async () => (await a.range(`${name}/`)).kvs.length === 2, { what: 'waiting contender' });
      abort.abort(new Error('operator gave up'));
      await expect(waiting).rejects.toThrow('operator gave up');
      await waitFor(async () => (await a.range(`${name}/`)).kvs.length === 1, { what: 'withdrawn key' });
      await holder.resign();
    });

    it('a nested election name is a separate election', async () => {
      const s = await ctx.open();
      const name = `${ctx.prefix()}election`;
      const outer = await campaign(s, name, 'outer', { ttlSeconds: 2 });
      const inner = await campaign(s, `${name}/inner`, 'inner', { ttlSeconds: 2 });
      expect((await currentLeader(s, name))?.value).toBe('outer');
      expect((await currentLeader(s, `${name}/inner`))?.value).toBe('inner');
      await outer.resign();
      expect(await currentLeader(s, name)).toBeNull();
      await inner.resign();
    });

    it('leadership is lost when its key is deleted behind its back', async () => {
      const [a, b] = [await ctx.open(), await ctx.open()];
      const name = `${ctx.prefix()}election`;
      const holder = await campaign(a, name, 'a', { ttlSeconds: 2 });
      await b.delete(holder.key);
      await waitFor(() => holder.lost.aborted, { what: 'lost signal' });
      await holder.resign();
    });
  });
}
