import type { Listing } from '../output/render.js';
import type { DeleteOutcome, Orphan } from './types.js';

/** An orphan as listed, with what --delete did about it when it ran. */
export type OrphanRow = Orphan & { outcome?: { result: DeleteOutcome['result']; detail: string } };

export function orphanRows(orphans: Orphan[], outcomes?: DeleteOutcome[]): OrphanRow[] {
  if (!outcomes) return orphans;
  return orphans.map((o) => {
    const r = outcomes.find((x) => x.orphan === o);
    return r ? { ...o, outcome: { result: r.result, detail: r.detail } } : o;
  });
}

/** KIND, ID, VOLUME, NODE, REASON; -o wide adds POOL, ACTION and the parts of csi-node leftovers. */
export function orphanListing(rows: OrphanRow[]): Listing<OrphanRow> {
  const withOutcome = rows.some((r) => r.outcome);
  return {
    rows,
    columns: [
      { header: 'KIND', get: (o) => o.kind },
      { header: 'ID', get: (o) => o.id },
      { header: 'VOLUME', get: (o) => o.volume },
      { header: 'NODE', get: (o) => o.node },
      { header: 'POOL', get: (o) => o.pool, wide: true },
      { header: 'REASON', get: (o) => o.reason },
      { header: 'ACTION', get: (o) => o.action, wide: true },
      { header: 'PARTS', get: (o) => o.paths?.join('; ') ?? o.key, wide: true },
      ...(withOutcome
        ? [
            { header: 'RESULT', get: (o: OrphanRow) => o.outcome?.result },
            { header: 'DETAIL', get: (o: OrphanRow) => o.outcome?.detail, wide: true },
          ]
        : []),
    ],
  };
}
