import { describe, expect, it } from 'vitest';
import { NotFoundError, UsageError } from '../../../src/lib/errors.js';
import { waitFor } from '../../helpers/wait.js';
import type { ContractContext } from './contract.js';

/** grant / keepalive / revoke / expiry / lost. */
export function registerLeaseContract(ctx: ContractContext): void {
  describe('leases', () => {
    it('grant gives a hex id and a TTL; keys carry the lease id', async () => {
      const s = await ctx.open();
      const lease = await s.grantLease(2);
      expect(lease.id).toMatch(/^[0-9a-f]+$/);
      expect(lease.ttlSeconds).toBe(2);
      const ttl = await s.leaseTimeToLive(lease.id);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2);
      const key = `${ctx.prefix()}leased`;
      await lease.put(key, 'v');
      expect((await s.get(key))?.lease).toBe(lease.id);
      await lease.revoke();
      await expect(s.grantLease(0)).rejects.toBeInstanceOf(UsageError);
    });

    it('automatic keepalive keeps the key well past the TTL', async () => {
      const s = await ctx.open();
      const other = await ctx.open();
      const key = `${ctx.prefix()}kept`;
      const lease = await s.grantLease(1);
      await lease.put(key, 'v');
      const until = Date.now() + 3_000;
      // the behaviour under test is time itself: the key must exist at every check for 3 TTLs
      await waitFor(
        async () => {
          expect(await other.get(key)).not.toBeNull();
          return Date.now() > until;
        },
        { timeoutMs: 10_000, intervalMs: 100, what: 'three TTLs with the key present' },
      );
      expect(lease.lost.aborted).toBe(false);
      await lease.revoke();
    });

    it('revoke deletes the lease keys and aborts lost; revoke is idempotent', async () => {
      const s = await ctx.open();
      const p = ctx.prefix();
      const lease = await s.grantLease(10);
      await lease.put(`${p}a`, '1');
      await lease.put(`${p}b`, '2');
      await s.put(`${p}c`, 'unleased');
      await lease.revoke();
      expect((await s.range(p)).kvs.map((kv) => kv.key)).toEqual([`${p}c`]);
      expect(lease.lost.aborted).toBe(true);
      expect(await s.leaseTimeToLive(lease.id)).toBe(-1);
      await lease.revoke();
      await expect(s.put(`${p}d`, 'x', { lease: lease.id })).rejects.toBeInstanceOf(NotFoundError);
    });

    it('a lease revoked by another client loses its keys, and the holder sees lost at its next keepalive', async () => {
      const holder = await ctx.open();
      const operator = await ctx.open();
      const key = `${ctx.prefix()}held`;
      const lease = await holder.grantLease(2);
      await lease.put(key, 'v');
      await operator.revokeLease(lease.id);
      expect(await operator.get(key)).toBeNull();
      const t0 = Date.now();
      await waitFor(() => lease.lost.aborted, {
        timeoutMs: 10_000,
        what: 'lost signal after revocation elsewhere',
      });
      // At the next keepalive (every ttl/3, 0.67 s) plus its round trip, not at some later check:
      // 4 s is six keepalive periods, room for a machine 3x slower than the 2 s this once held.
      expect(Date.now() - t0).toBeLessThan(4_000);
      await operator.revokeLease(lease.id); // idempotent
      await operator.revokeLease('123abc'); // unknown ids too
    });

    it('without keepalive the lease expires: its keys vanish and lost aborts', async () => {
      const s = await ctx.open();
      const other = await ctx.open();
      const key = `${ctx.prefix()}expiring`;
      const lease = await s.grantLease(1, { keepAlive: false });
      await lease.put(key, 'v');
      const t0 = Date.now();
      await waitFor(async () => (await other.get(key)) === null, {
        timeoutMs: 10_000,
        what: 'key of expired lease gone',
      });
      const elapsed = Date.now() - t0;
      expect(elapsed).toBeGreaterThan(500);
      // The 1 s TTL plus three times the 1.5 s of detection slack this once allowed (a slow machine
      // only adds detection time; the TTL is wall-clock).
      expect(elapsed).toBeLessThan(1_000 + 3 * 1_500);
      await waitFor(() => lease.lost.aborted, { timeoutMs: 3_000, what: 'lost signal' });
      expect(await other.leaseTimeToLive(lease.id)).toBe(-1);
      await expect(lease.keepAliveOnce()).rejects.toBeInstanceOf(NotFoundError);
    });

    it('keepAliveOnce renews a manual lease; it reports a lease that expired', async () => {
      const s = await ctx.open();
      const lease = await s.grantLease(1, { keepAlive: false });
      await lease.keepAliveOnce();
      expect(await s.leaseTimeToLive(lease.id)).toBeGreaterThanOrEqual(0);
      await waitFor(async () => (await s.leaseTimeToLive(lease.id)) === -1, {
        timeoutMs: 5_000,
        what: 'expiry',
      });
      const again = await s.grantLease(1, { keepAlive: false });
      await again.revoke();
      await expect(again.keepAliveOnce()).rejects.toBeInstanceOf(NotFoundError);
    });
  });
}
