import * as grpc from '@grpc/grpc-js';
import { GrpcError } from '../../lib/grpc/status.js';
import { invalid } from './errors.js';
import type { Pool } from './pool.js';
import type { Replica } from './replica.js';

/**
 * One page of a listing in the io-engine's own order (pools in turn, each pool's items in creation
 * order), resumed by a token `<index>:<uuid>` naming the last item the page before gave. Items
 * removed before that point shift the index: the uuid is then looked up. Items created meanwhile
 * come at the end of their pool's run, so every item present from the first page to the last is
 * listed exactly once; an item made during the listing may be left out (the next listing has it).
 * If the item the token names is gone, where to resume is unknown: ABORTED, list again.
 */
export function listingPage<T extends { uuid: string }>(
  items: T[],
  token: string,
  maxEntries: number,
): { page: T[]; nextToken: string } {
  const start = token ? resumeAt(items, token) : 0;
  const end = maxEntries > 0 ? Math.min(items.length, start + maxEntries) : items.length;
  const page = items.slice(start, end);
  return { page, nextToken: end < items.length ? `${end}:${page[page.length - 1].uuid}` : '' };
}

function resumeAt<T extends { uuid: string }>(items: T[], token: string): number {
  const m = /^(\d{1,9}):(.+)$/.exec(token);
  if (!m) throw invalid(`starting_token '${token.slice(0, 64)}' is not a token this io-engine gave`);
  const index = Number(m[1]);
  const uuid = m[2];
  if (items[index - 1]?.uuid === uuid) return index;
  const at = items.findIndex((item) => item.uuid === uuid);
  if (at < 0)
    throw new GrpcError(
      grpc.status.ABORTED,
      `the listing changed: '${uuid}', where the page before ended, is gone; list again from the start`,
    );
  return at + 1;
}

/**
 * The replicas of some pools in listing order, built again only when one of those pools gained or
 * lost a replica since: paging through 100k replicas rebuilt the whole list for every page
 * (~8 ms each, on the thread that also serves I/O).
 */
export class ReplicaList {
  private last: { pools: Pool[]; changes: number[]; items: Replica[] } | undefined;

  of(pools: Pool[]): Replica[] {
    const l = this.last;
    const same =
      l?.pools.length === pools.length &&
      pools.every((p, i) => p === l.pools[i] && p.replicaChanges === l.changes[i]);
    if (!same || !l) {
      const items = pools.flatMap((p) => [...p.replicas.values()]);
      this.last = { pools, changes: pools.map((p) => p.replicaChanges), items };
      return items;
    }
    return l.items;
  }
}
