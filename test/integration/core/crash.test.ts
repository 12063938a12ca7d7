import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedFetch } from '../../helpers/openapi-validate.js';
import { fatal, waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { checkConsistency } from './invariants.js';

const MiB = 1 << 20;

/** What a volume is known to be after the answers core gave: only acknowledged answers count. */
type Known = 'exists' | 'gone' | 'unknown';

/** One REST request's outcome: its HTTP status, or `lost` when no answer came (core killed). */
type Answer = number | 'lost';

interface Op {
  id: string;
  what: 'create' | 'publish' | 'delete';
  answer: Answer;
}

/**
 * The state a volume must be in after a sequence of requests on it, given their answers. A 2xx is an
 * acknowledgment: create 200 → it exists, delete 204 → it is gone. A 4xx changed nothing (create
 * 409 AlreadyExists, delete 404 …). No answer or a 5xx may or may not have taken effect: unknown
 * until something later is acknowledged. A delete answered 404 on a volume whose create was
 * acknowledged means the volume was lost: that is reported.
 */
function apply(known: Known, op: Op, lost: string[]): Known {
  const { answer } = op;
  if (answer === 'lost' || answer >= 500) return op.what === 'publish' ? known : 'unknown';
  if (op.what === 'create') return answer === 200 ? 'exists' : known;
  if (op.what === 'publish') return answer === 200 ? 'exists' : known;
  if (answer === 204) return 'gone';
  if (answer === 404) {
    if (known === 'exists') lost.push(`acknowledged volume ${op.id} answered 404 to a delete`);
    return 'gone';
  }
  return known;
}

/**
 * kill -9 of core while 200 requests are in flight, three rounds (the last without a kill). Durable
 * means: what core acknowledged survives the crash. After every restart each volume whose last
 * acknowledged request was a create (or publish) exists fully created — status Created, no pending
 * operation, all its replicas in the store and on their io-engines — and each whose last
 * acknowledged request was a delete is gone; nothing is orphaned or left pending. In the round
 * without a kill every request is answered with success.
 */
for (const backend of ['embedded', 'etcd'] as Backend[]) {
  describe(`core crash safety: kill -9 during 200 concurrent operations (${backend} store)`, () => {
    let cluster: TestCluster;
    beforeAll(async () => {
      cluster = await TestCluster.start({ backend });
    }, 90_000);
    afterAll(async () => {
      await cluster?.stop();
    });

    it('every acknowledged create survives each restart fully created, every acknowledged delete stays gone', async () => {
      const ids = Array.from({ length: 100 }, () => newVolumeId());
      const known = new Map<string, Known>(ids.map((id) => [id, 'gone']));
      const checked = { exists: 0, gone: 0 };
      for (let round = 0; round < 3; round++) {
        const kill = round < 2;
        const core = cluster.cores.at(-1)!;
        const base = `${cluster.restUrl}/v0/volumes`;
        let acks = 0;
        const send = async (id: string, what: Op['what'], method: string, path: string, body?: unknown) => {
          let answer: Answer;
          try {
            const res = await checkedFetch(`${base}/${id}${path}`, {
              method,
              headers: body ? { 'content-type': 'application/json' } : {},
              body: body ? JSON.stringify(body) : undefined,
              signal: AbortSignal.timeout(30_000),
            });
            answer = res.status;
            if (answer < 300) acks++;
          } catch {
            answer = 'lost';
          }
          return { id, what, answer } satisfies Op;
        };
        // Up to 200 requests at once: a volume that exists is deleted (every other one created again),
        // one that is gone is created and published. Requests on one volume run in order; their
        // answers are recorded.
        const ops = ids.map(async (id, i) => {
          const create = () =>
            send(id, 'create', 'PUT', '', {
              size: 4 * MiB,
              replicas: 1 + ((i + round) % 3),
              thin: true,
              policy: { self_heal: true },
            });
          if (known.get(id) === 'exists') {
            const deleted = await send(id, 'delete', 'DELETE', '');
            return i % 2 ? [deleted, await create()] : [deleted];
          }
          const created = await create();
          return [
            created,
            await send(id, 'publish', 'PUT', '/target', { protocol: 'nbd', publish_context: {} }),
          ];
        });
        const all = Promise.all(ops);
        if (kill) {
          // kill -9 at a random point while the operations are in flight, once some were acknowledged
          // (the durability of acknowledged requests across the crash is what this checks).
          const threshold = 10 + Math.floor(Math.random() * 30);
          await waitFor(() => acks >= threshold, {
            what: `${threshold} acknowledged requests`,
            timeoutMs: 60_000,
          });
          core.child.kill('SIGKILL');
          await core.wait();
        }
        const answers = (await all).flat();
        if (kill) await cluster.startCore();
        else {
          // Without a kill every request succeeds: create and publish 200, delete 204.
          const failed = answers.filter((o) => o.answer !== (o.what === 'delete' ? 204 : 200));
          expect(failed, 'requests that failed in the round without a kill').toEqual([]);
        }

        const lost: string[] = [];
        for (const op of answers) known.set(op.id, apply(known.get(op.id)!, op, lost));
        expect(lost).toEqual([]);
        const expectExists = ids.filter((id) => known.get(id) === 'exists');
        const expectGone = ids.filter((id) => known.get(id) === 'gone');
        // Without a kill every volume's state is known from its answers.
        if (!kill) expect(expectExists.length + expectGone.length).toBe(ids.length);

        // What was acknowledged is in the store the moment core is back, so a miss ends the wait at
        // once; the rest (orphans, pending operations) may take the reconcilers a while.
        const check = async () => {
          const r = await checkConsistency(cluster);
          const before = r.violations.length;
          const specs = new Map(r.specs.map((v) => [v.uuid, v]));
          for (const id of expectExists) {
            const v = specs.get(id);
            if (!v) {
              r.violations.push(`acknowledged create ${id} lost: no volume spec`);
              continue;
            }
            if (typeof v.status !== 'object' || !('Created' in v.status))
              r.violations.push(`acknowledged create ${id} has status ${JSON.stringify(v.status)}`);
            const replicas = r.replicas.filter((x) => x.owners.volume === id);
            if (replicas.length !== v.num_replicas || replicas.some((x) => typeof x.status !== 'object'))
              r.violations.push(
                `acknowledged create ${id}: ${replicas.length}/${v.num_replicas} replicas created`,
              );
          }
          for (const id of expectGone) {
            if (specs.has(id)) r.violations.push(`acknowledged delete ${id} still has a volume spec`);
            if (r.replicas.some((x) => x.owners.volume === id))
              r.violations.push(`acknowledged delete ${id} still owns replicas`);
          }
          if (r.violations.length > before) fatal(r.violations.slice(before).join('\n'));
          return r;
        };
        const result = await waitFor(
          async () => {
            const r = await check();
            return r.violations.length === 0 ? r : null;
          },
          { timeoutMs: 60_000, intervalMs: 500, what: `consistency after round ${round}` },
        ).catch(async (err) => {
          const first = (err as Error).message;
          const r = await checkConsistency(cluster);
          const id =
            /[0-9a-f-]{36}/.exec(first)?.[0] ?? /[0-9a-f-]{36}/.exec(r.violations[0] ?? '')?.[0] ?? '';
          const history = (await cluster.events()).filter((e) => e.includes(id));
          const requests = answers.filter((o) => o.id === id).map((o) => `${o.what} → ${o.answer}`);
          throw new Error(
            `${(err as Error).message}\n${r.violations.slice(0, 60).join('\n')}\nrequests on ${id} this round: ${requests.join(', ')}\nevents of ${id}:\n${history.join('\n')}`,
          );
        });
        expect(result.violations).toEqual([]);
        checked.exists += expectExists.length;
        checked.gone += expectGone.length;
        // What no answer settled is now whatever recovery made of it: fully created or gone.
        const present = new Set(result.specs.map((v) => v.uuid));
        for (const id of ids)
          if (known.get(id) === 'unknown') known.set(id, present.has(id) ? 'exists' : 'gone');
      }
      // Both kinds of acknowledgment were checked (how many: checked).
      expect(checked.exists).toBeGreaterThan(0);
      expect(checked.gone).toBeGreaterThan(0);
      // The kills did land on operations in flight: some were recovered at restart.
      expect((await cluster.events()).some((e) => e.includes('"Recovered"'))).toBe(true);
    }, 300_000);
  });
}
