import { describe, expect, it } from 'vitest';
import { NotFoundError, UsageError } from '../../../src/lib/errors.js';
import type { ContractContext } from './contract.js';

/** get / range / put / delete / deletePrefix / txn / revision. */
export function registerKvContract(ctx: ContractContext): void {
  describe('keys and revisions', () => {
    it('put then get returns the value with create/mod revision, version and no lease', async () => {
      const s = await ctx.open();
      const key = `${ctx.prefix()}k`;
      expect(await s.get(key)).toBeNull();
      const r1 = await s.put(key, 'one');
      expect(r1.revision).toBeGreaterThan(0);
      expect(await s.get(key)).toEqual({
        key,
        value: 'one',
        createRevision: r1.revision,
        modRevision: r1.revision,
        version: 1,
        lease: '0',
      });
      const r2 = await s.put(key, 'two ✓');
      expect(r2.revision).toBe(r1.revision + 1);
      expect(await s.get(key)).toMatchObject({
        value: 'two ✓',
        createRevision: r1.revision,
        modRevision: r2.revision,
        version: 2,
      });
      expect(await s.revision()).toBe(r2.revision);
      // another client sees the same state
      const other = await ctx.open();
      expect((await other.get(key))?.value).toBe('two ✓');
    });

    it('range returns keys under the prefix sorted, paged by limit and startKey', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      for (const k of ['d', 'b', 'a', 'e', 'c']) await s.put(`${p}${k}`, k);
      await s.put(p.slice(0, -1), 'outside'); // the prefix without its slash is not under it
      await s.put(`${p.slice(0, -1)}0`, 'outside');
      const all = await s.range(p);
      expect(all.kvs.map((kv) => kv.value)).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(all.more).toBe(false);
      expect(all.revision).toBe(await s.revision());

      const page1 = await s.range(p, { limit: 2 });
      expect(page1.kvs.map((kv) => kv.value)).toEqual(['a', 'b']);
      expect(page1.more).toBe(true);
      const seen: string[] = [];
      let startKey: string | undefined;
      for (;;) {
        const page = await s.range(p, { limit: 2, startKey });
        seen.push(...page.kvs.map((kv) => kv.value));
        if (!page.more) break;
        startKey = `${page.kvs[page.kvs.length - 1].key}\0`;
      }
      expect(seen).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect((await s.range(p, { startKey: `${p}d` })).kvs.map((kv) => kv.value)).toEqual(['d', 'e']);
      expect((await s.range(p, { limit: 5 })).more).toBe(false);
      await expect(s.range(p, { startKey: 'elsewhere/' })).rejects.toBeInstanceOf(UsageError);
    });

    it('range stops before endKey, which must lie under the prefix', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      for (const k of ['a', 'b', 'c', 'd']) await s.put(`${p}${k}`, k);
      await s.put(`${p.slice(0, -1)}0`, 'outside');
      const values = async (o: { startKey?: string; endKey?: string; limit?: number }) =>
        (await s.range(p, o)).kvs.map((kv) => kv.value);
      expect(await values({ endKey: `${p}c` })).toEqual(['a', 'b']);
      expect(await values({ startKey: `${p}b`, endKey: `${p}d` })).toEqual(['b', 'c']);
      expect(await values({ startKey: `${p}c`, endKey: `${p}c` })).toEqual([]);
      expect(await values({ endKey: `${p.slice(0, -1)}0` })).toEqual(['a', 'b', 'c', 'd']);
      const limited = await s.range(p, { limit: 1, endKey: `${p}c` });
      expect([limited.kvs.map((kv) => kv.value), limited.more]).toEqual([['a'], true]);
      // The count is optional by contract, reported by etcd and left out by the embedded store: each
      // backend is held to what it promises.
      expect(limited.count).toBe(ctx.harness.name === 'etcd' ? 2 : undefined);
      await expect(s.range(p, { endKey: 'zz/' })).rejects.toBeInstanceOf(UsageError);
      await expect(s.range(p, { endKey: p })).rejects.toBeInstanceOf(UsageError);
    });

    it('range returns thousands of keys in one sorted, consistent result', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const n = 2_500; // more than one etcd page
      for (let b = 0; b < n; b += 100) {
        const success = Array.from({ length: 100 }, (_, i) => ({
          type: 'put' as const,
          key: `${p}${String(b + i).padStart(5, '0')}`,
          value: 'v'.repeat(500),
        }));
        await s.txn({ compare: [], success });
      }
      const all = await s.range(p);
      expect(all.kvs.length).toBe(n);
      expect(all.more).toBe(false);
      expect(all.kvs.map((kv) => kv.key)).toEqual([...all.kvs.map((kv) => kv.key)].sort());
      const limited = await s.range(p, { limit: 2_100, startKey: `${p}00100` });
      expect(limited.kvs.length).toBe(2_100);
      expect(limited.kvs[0].key).toBe(`${p}00100`);
      expect(limited.more).toBe(true);
      await s.deletePrefix(p);
    });

    it('delete and deletePrefix report counts; deleting nothing leaves the revision alone', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      await s.put(`${p}a`, '1');
      await s.put(`${p}b/1`, '2');
      await s.put(`${p}b/2`, '3');
      const before = await s.revision();
      expect(await s.delete(`${p}missing`)).toEqual({ deleted: 0, revision: before });
      const d = await s.delete(`${p}a`);
      expect(d).toEqual({ deleted: 1, revision: before + 1 });
      expect(await s.get(`${p}a`)).toBeNull();
      const dp = await s.deletePrefix(`${p}b/`);
      expect(dp).toEqual({ deleted: 2, revision: before + 2 });
      expect((await s.range(p)).kvs).toEqual([]);
      // re-created key starts a new life: version 1, new create revision
      const r = await s.put(`${p}a`, 'again');
      expect(await s.get(`${p}a`)).toMatchObject({ version: 1, createRevision: r.revision });
    });

    it('rejects empty keys as usage errors', async () => {
      const s = await ctx.open();
      await expect(s.put('', 'x')).rejects.toBeInstanceOf(UsageError);
      await expect(s.get('')).rejects.toBeInstanceOf(UsageError);
    });
  });

  describe('transactions', () => {
    it('compare-and-swap on mod revision: fresh succeeds, stale runs the failure branch', async () => {
      const s = await ctx.open();
      const key = `${ctx.prefix()}cas`;
      const { revision } = await s.put(key, 'v1');
      const ok = await s.txn({
        compare: [{ key, target: 'mod', op: '==', value: revision }],
        success: [{ type: 'put', key, value: 'v2' }],
        failure: [{ type: 'get', key }],
      });
      expect(ok.succeeded).toBe(true);
      expect(ok.revision).toBe(revision + 1);
      const stale = await s.txn({
        compare: [{ key, target: 'mod', op: '==', value: revision }],
        success: [{ type: 'put', key, value: 'v3' }],
        failure: [{ type: 'get', key }],
      });
      expect(stale.succeeded).toBe(false);
      expect(stale.revision).toBe(revision + 1); // nothing written
      expect(stale.responses[0].kv).toMatchObject({
        key,
        value: 'v2',
        modRevision: revision + 1,
        version: 2,
      });
    });

    it('create == 0 creates only once; version and create compares', async () => {
      const s = await ctx.open();
      const key = `${ctx.prefix()}once`;
      const create = () =>
        s.txn({
          compare: [{ key, target: 'create', op: '==', value: 0 }],
          success: [{ type: 'put', key, value: 'x' }],
        });
      expect((await create()).succeeded).toBe(true);
      expect((await create()).succeeded).toBe(false);
      const kv = (await s.get(key))!;
      expect(
        (
          await s.txn({
            compare: [{ key, target: 'create', op: '==', value: kv.createRevision }],
            success: [],
          })
        ).succeeded,
      ).toBe(true);
      expect(
        (await s.txn({ compare: [{ key, target: 'version', op: '==', value: 1 }], success: [] })).succeeded,
      ).toBe(true);
      expect(
        (await s.txn({ compare: [{ key, target: 'version', op: '>', value: 1 }], success: [] })).succeeded,
      ).toBe(false);
      expect(
        (await s.txn({ compare: [{ key, target: 'mod', op: '<', value: kv.modRevision + 1 }], success: [] }))
          .succeeded,
      ).toBe(true);
      expect(
        (await s.txn({ compare: [{ key, target: 'mod', op: '!=', value: kv.modRevision }], success: [] }))
          .succeeded,
      ).toBe(false);
    });

    it('writes issued together each get a revision of their own; a failing one fails alone', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const lease = await s.grantLease(60);
      await lease.revoke();
      const settled = await Promise.allSettled([
        s.put(`${p}a`, '1'),
        s.txn({
          compare: [{ key: `${p}b`, target: 'create', op: '==', value: 0 }],
          success: [{ type: 'put', key: `${p}b`, value: '2' }],
        }),
        s.put(`${p}gone`, 'x', { lease: lease.id }), // its lease is revoked
        s.put(`${p}c`, '3'),
      ]);
      expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(NotFoundError);
      expect((settled[1] as PromiseFulfilledResult<{ succeeded: boolean }>).value.succeeded).toBe(true);
      const [a, b, , c] = settled.map((r) => (r.status === 'fulfilled' ? r.value.revision : 0));
      expect(new Set([a, b, c]).size).toBe(3);
      expect((await s.range(p)).kvs.map((kv) => [kv.key.slice(p.length), kv.modRevision])).toEqual([
        ['a', a],
        ['b', b],
        ['c', c],
      ]);
    });

    it('value compares are byte-wise; a value compare on a missing key fails', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      await s.put(`${p}v`, 'm');
      const test = async (op: '==' | '!=' | '<' | '>', value: string, key = `${p}v`) =>
        (await s.txn({ compare: [{ key, target: 'value', op, value }], success: [] })).succeeded;
      expect(await test('==', 'm')).toBe(true);
      expect(await test('!=', 'm')).toBe(false);
      expect(await test('>', 'a')).toBe(true);
      expect(await test('<', 'z')).toBe(true);
      expect(await test('<', 'a')).toBe(false);
      expect(await test('==', '', `${p}missing`)).toBe(false);
      expect(await test('!=', 'anything', `${p}missing`)).toBe(false);
    });

    it('lease compares; a multi-key transaction commits at one revision', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const lease = await s.grantLease(5);
      await lease.put(`${p}owned`, 'x');
      await s.put(`${p}free`, 'y');
      const holds = async (key: string, op: '==' | '!=', value: string) =>
        (await s.txn({ compare: [{ key, target: 'lease', op, value }], success: [] })).succeeded;
      expect(await holds(`${p}owned`, '==', lease.id)).toBe(true);
      expect(await holds(`${p}free`, '==', '0')).toBe(true);
      expect(await holds(`${p}missing`, '==', '0')).toBe(true);
      expect(await holds(`${p}free`, '!=', lease.id)).toBe(true);

      const r = await s.txn({
        compare: [
          { key: `${p}owned`, target: 'lease', op: '==', value: lease.id },
          { key: `${p}free`, target: 'version', op: '==', value: 1 },
        ],
        success: [
          { type: 'put', key: `${p}a`, value: '1' },
          { type: 'put', key: `${p}b`, value: '2', lease: lease.id },
          { type: 'delete', key: `${p}free` },
          { type: 'get', key: `${p}a` },
        ],
      });
      expect(r.succeeded).toBe(true);
      expect(r.responses[2].deleted).toBe(1);
      expect(r.responses[3].kv).toMatchObject({ value: '1', modRevision: r.revision });
      const a = (await s.get(`${p}a`))!;
      const b = (await s.get(`${p}b`))!;
      expect(a.modRevision).toBe(r.revision);
      expect(b.modRevision).toBe(r.revision);
      expect(b.lease).toBe(lease.id);
      await lease.revoke();
    });
  });
}
