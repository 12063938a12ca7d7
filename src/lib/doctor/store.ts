import { deleteOrphans } from '../orphans/delete.js';
import { readSnapshot } from '../orphans/snapshot.js';
import type { DeleteOutcome } from '../orphans/types.js';
import type { KeySpace } from '../store/keys.js';
import type { Store } from '../store/types.js';
import { checkStore, type Severity, type StoreFinding } from './store-checks.js';
import { scanStore } from './store-scan.js';

export type { Severity, StoreFinding } from './store-checks.js';

export interface StoreReport {
  store: string;
  /** Store revision when the check started. */
  revision: number;
  scanned: { keys: number; records: number };
  findings: StoreFinding[];
  counts: Record<Severity, number>;
  healthy: boolean;
}

export interface DiagnoseOptions {
  /** A finished switchover older than this is stale. */
  switchoverGraceMs: number;
}

/**
 * Check the whole store of one cluster. Reads only the store (works with every daemon down): one
 * scan that decodes every value, and the orphan finders' snapshot for the reference checks.
 */
export async function diagnoseStore(
  store: Store,
  space: KeySpace,
  opts: DiagnoseOptions,
): Promise<StoreReport> {
  const scan = await scanStore(store, space);
  const snapshot = await readSnapshot(store, space);
  const leaseOwners = [];
  for (const rec of scan.records) {
    if (rec.record.type !== 'StoreLeaseOwner') continue;
    const value = rec.record.value;
    const alive = (await store.leaseTimeToLive(value.lease_id)) >= 0;
    leaseOwners.push({ record: rec, value, alive });
  }
  const findings = checkStore({
    scan,
    snapshot,
    leaseOwners,
    switchoverGraceMs: opts.switchoverGraceMs,
    endpoint: store.endpoint,
    alarms: (await store.alarms?.()) ?? [],
    silentEndpoints: ((await store.endpointHealth?.()) ?? []).filter((e) => e.error !== undefined),
  });
  const counts = { error: 0, warning: 0 };
  for (const f of findings) counts[f.severity]++;
  return {
    store: store.endpoint,
    revision: scan.revision,
    scanned: { keys: scan.keys, records: scan.records.length },
    findings,
    counts,
    healthy: findings.length === 0,
  };
}

export interface FixOutcome {
  subject: string;
  check: string;
  result: DeleteOutcome['result'];
  detail: string;
}

/**
 * Repair what is safe: store-only deletes, each guarded on the key's mod revision (and, for orphan
 * records, on their owner still being absent, as `orphans --delete` does), so a record that changed
 * since it was read is left alone. Everything else names its fix and stays as it is.
 */
export async function fixStore(store: Store, space: KeySpace, report: StoreReport): Promise<FixOutcome[]> {
  const out: FixOutcome[] = [];
  const fixable = report.findings.filter((f) => f.fixable);
  const orphans = fixable.flatMap((f) => (f.orphan ? [f.orphan] : []));
  if (orphans.length) {
    const snapshot = await readSnapshot(store, space);
    const outcomes = await deleteOrphans(
      { orphans, notes: [], snapshot, engines: [], csiNode: null, decodeErrors: [] },
      {
        store,
        space,
        // Only store keys are deleted here; nothing goes through core.
        rest: () => {
          throw new Error('doctor store does not delete through core');
        },
        kube: null,
        csiNodeRoots: [],
        engineTimeoutMs: 0,
      },
    );
    for (const o of outcomes) {
      const f = fixable.find((x) => x.orphan === o.orphan)!;
      out.push({ subject: f.subject, check: f.check, result: o.result, detail: o.detail });
    }
  }
  for (const f of fixable) {
    if (f.check !== 'dead-lease-owner' || !f.key) continue;
    // Checked again right before: a service that took the lease meanwhile rewrote the record.
    const kv = await store.get(f.key);
    const owner = kv ? (JSON.parse(kv.value) as { lease_id?: string }) : null;
    const alive = owner?.lease_id ? (await store.leaseTimeToLive(owner.lease_id)) >= 0 : false;
    if (!kv || kv.modRevision !== f.modRevision || alive) {
      out.push({
        subject: f.subject,
        check: f.check,
        result: 'skipped',
        detail: 'changed meanwhile: left alone',
      });
      continue;
    }
    const res = await store.txn({
      compare: [{ key: f.key, target: 'mod', op: '==', value: kv.modRevision }],
      success: [{ type: 'delete', key: f.key }],
    });
    out.push({
      subject: f.subject,
      check: f.check,
      result: res.succeeded ? 'deleted' : 'skipped',
      detail: res.succeeded ? `deleted ${f.key} from the store` : 'changed meanwhile: left alone',
    });
  }
  return out;
}
