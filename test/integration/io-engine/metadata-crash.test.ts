import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { fatal, waitFor } from '../../helpers/wait.js';
import { CLUSTER_ID, type RunningEngine, startEngine } from './engines.js';

const MiB = 1024 * 1024;
const POOL = 'crashy';

/**
 * Pool metadata is group-committed: many replica creates and destroys share one metadata write. A
 * kill -9 at any moment must leave the metadata consistent with the files: after restart + import the
 * pool lists every acknowledged create (minus acknowledged destroys), possibly some unacknowledged
 * ones, never a replica without its file, and no file the metadata does not name.
 */
describe('io-engine pool metadata survives kill -9 during concurrent replica changes', () => {
  let dir: string;
  let engine: RunningEngine;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-crash-'));
    engine = await startEngine(dir, 'node-a');
    await engine.client.createPool({ name: POOL, capacity: 64 * 1024 * MiB });
  });

  afterAll(async () => {
    await engine?.stop('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps exactly the acknowledged replicas over three crashes and a clean restart', async () => {
    const attempted = new Set<string>();
    const live = new Set<string>(); // acknowledged creates not (acknowledged-)destroyed
    const destroyed = new Set<string>(); // acknowledged destroys
    const destroying = new Set<string>(); // destroys sent, not answered: maybe applied
    // Three rounds end in kill -9; the fourth stops its requests, then the engine (SIGTERM).
    for (let round = 0; round < 4; round++) {
      const kill = round < 3;
      let stop = false;
      let killing = false;
      let acked = 0;
      // Requests that failed although the engine was not being killed: each one a defect.
      const failures: string[] = [];
      const client = engine.client;
      const worker = async (w: number) => {
        for (let i = 0; !stop; i++) {
          // Every fifth request destroys an acknowledged replica, the rest create one.
          const victim = i % 5 === 4 ? [...live].find((u) => !destroying.has(u)) : undefined;
          try {
            if (victim) {
              destroying.add(victim);
              await client.destroyReplica(victim);
              destroying.delete(victim);
              live.delete(victim);
              destroyed.add(victim);
            } else {
              const uuid = randomUUID();
              attempted.add(uuid);
              await client.createReplica({
                uuid,
                pool: POOL,
                size: MiB,
                thin: true,
                share: w % 4 ? 'none' : 'nbd',
              });
              live.add(uuid);
            }
            acked++;
          } catch (err) {
            // Once the kill is under way the engine may die under this request; before, nothing
            // may fail.
            if (!killing) failures.push(`${victim ? `destroy ${victim}` : 'create'}: ${String(err)}`);
            return;
          }
        }
      };
      const workers = Array.from({ length: 32 }, (_, w) => worker(w));
      // Kill at a different point each round, while requests are in flight.
      await waitFor(
        () => {
          if (failures.length > 0) fatal(`requests failed with the engine up:\n${failures.join('\n')}`);
          return acked >= 60 + round * 70;
        },
        { what: 'acknowledged changes', timeoutMs: 60_000 },
      );
      if (kill) {
        killing = true;
        await engine.proc.kill('SIGKILL');
        stop = true;
        await Promise.all(workers);
      } else {
        stop = true;
        await Promise.all(workers);
        expect(destroying.size, 'destroys in flight at a clean stop').toBe(0);
        expect(await engine.proc.kill('SIGTERM')).toBe(0);
      }
      client.close();
      expect(failures).toEqual([]);

      engine = await startEngine(dir, 'node-a');
      const pool = await engine.client.importPool({ name: POOL });
      const listed = new Set((await engine.client.listReplicas(POOL)).map((r) => r.uuid));
      const files = (await readdir(join(engine.poolDir, POOL, 'replicas'))).map((f) =>
        f.replace(/\.img$/, ''),
      );
      expect(pool.replicaCount).toBe(listed.size);
      // Metadata and files agree: nothing lost, nothing orphaned.
      expect(new Set(files)).toEqual(listed);
      for (const u of live) {
        // A destroy in flight at the kill may or may not have been applied.
        if (!destroying.has(u)) expect(listed.has(u), `acknowledged replica ${u} lost`).toBe(true);
      }
      for (const u of destroyed) expect(listed.has(u), `destroyed replica ${u} back`).toBe(false);
      for (const u of listed) expect(attempted.has(u), `unknown replica ${u}`).toBe(true);
      // After a clean stop nothing is in doubt: exactly the acknowledged replicas are there.
      if (!kill) expect(listed).toEqual(live);
      expect((await readdir(join(engine.poolDir, POOL))).filter((f) => f.includes('.tmp-'))).toEqual([]);
      // Unacknowledged changes that made it count from now on.
      for (const u of listed) if (!destroyed.has(u)) live.add(u);
      for (const u of [...destroying]) {
        if (!listed.has(u)) {
          live.delete(u);
          destroyed.add(u);
        }
        destroying.delete(u);
      }
    }
    expect(destroyed.size).toBeGreaterThan(0);
  }, 240_000);

  it('leaves a store whose every value decodes and survives dump → load → dump', async () => {
    const checked = await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
      clusterId: CLUSTER_ID,
      namespace: 'default',
    });
    expect(checked).toBeGreaterThan(0);
  });
});
