import { DecodeError, StorctlError, UsageError } from '../errors.js';
import { decodeRecord } from '../specs/index.js';
import { type KeySpace, parseKey } from '../store/keys.js';
import type { KeyValue, Store, TxnOp } from '../store/types.js';
import type { DumpRecord } from './dump.js';

/** etcd refuses transactions of more than 128 operations (--max-txn-ops); stay below it. */
const TXN_CHUNK = 100;

export interface LoadPlan {
  records: DumpRecord[];
  /** Lease-bound keys of the dump (liveness, locks): they belong to live processes, never loaded. */
  skippedLeased: string[];
  /** Keys whose type storctl has no codec for (written only with --force). */
  unknownTypes: string[];
}

/**
 * Parse and validate a dump completely before anything is written: every line is a dump record,
 * every key lies in the selected key space, every value decodes. The first problem stops the load
 * with an error naming the line and the key.
 */
export function planLoad(text: string, space: KeySpace, { force = false } = {}): LoadPlan {
  const records: DumpRecord[] = [];
  const unknownTypes: string[] = [];
  const skippedLeased: string[] = [];
  const seen = new Set<string>();
  // JSON lines (`store dump`), or the JSON array of `store dump -o json`: one record per line either way.
  const lines = text.trimStart().startsWith('[')
    ? (parseArray(text) ?? []).map((r) => JSON.stringify(r))
    : text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (!line) continue;
    const where = `line ${i + 1}`;
    let rec: Partial<DumpRecord>;
    try {
      rec = JSON.parse(line);
    } catch (err) {
      throw new UsageError(
        `${where}: not JSON (${(err as Error).message}); expected one record of 'storctl store dump' per line`,
      );
    }
    if (typeof rec?.key !== 'string' || typeof rec.value !== 'string') {
      throw new UsageError(
        `${where}: expected {"key": string, "value": string, …} as written by 'storctl store dump'`,
      );
    }
    const parsed = parseKey(rec.key);
    if (!parsed) throw new UsageError(`${where}: key ${rec.key} lies outside the Mayastor v2 key space`);
    if (parsed.clusterId !== space.clusterId || parsed.namespace !== space.namespace) {
      throw new UsageError(
        `${where}: key ${rec.key} belongs to cluster '${parsed.clusterId}' namespace '${parsed.namespace}', not the selected '${space.clusterId}'/'${space.namespace}'`,
        {
          suggestions: [
            `storctl store load FILE --cluster-id ${parsed.clusterId} --namespace ${parsed.namespace}`,
          ],
        },
      );
    }
    if (rec.lease && rec.lease !== '0') {
      skippedLeased.push(rec.key);
      continue;
    }
    if (seen.has(rec.key)) throw new UsageError(`${where}: key ${rec.key} appears twice`);
    seen.add(rec.key);
    let decoded: ReturnType<typeof decodeRecord> | true;
    try {
      // storctl's own records (`<prefix>/storctl/…`) are JSON of ours: checked for JSON only.
      if (parsed.type === 'storctl') {
        JSON.parse(rec.value);
        decoded = true;
      } else decoded = decodeRecord(rec.key, rec.value);
    } catch (err) {
      if (err instanceof DecodeError) throw new UsageError(`${where}: ${err.message}`, { cause: err });
      if (err instanceof SyntaxError) throw new UsageError(`${where}: value of ${rec.key} is not JSON`);
      throw err;
    }
    if (!decoded) {
      if (!force) {
        throw new UsageError(
          `${where}: key ${rec.key} has type '${parsed.type}', which storctl does not know`,
          {
            suggestions: ['re-run with --force to load values of unknown types unchecked'],
          },
        );
      }
      unknownTypes.push(rec.key);
    }
    records.push({ key: rec.key, value: rec.value } as DumpRecord);
  }
  return { records, unknownTypes, skippedLeased };
}

function parseArray(text: string): unknown[] | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`not a JSON array of dump records: ${(err as Error).message}`);
  }
  return Array.isArray(v) ? v : null;
}

/**
 * Write every record, or none: chunks of puts go in one transaction each; if a later chunk fails,
 * the earlier ones are put back to what they held before (or deleted where they did not exist).
 */
export async function applyLoad(store: Store, plan: LoadPlan): Promise<{ written: number }> {
  const previous = new Map<string, KeyValue | null>();
  for (const r of plan.records) previous.set(r.key, await store.get(r.key));
  const chunks: DumpRecord[][] = [];
  for (let i = 0; i < plan.records.length; i += TXN_CHUNK) chunks.push(plan.records.slice(i, i + TXN_CHUNK));
  const done: DumpRecord[][] = [];
  try {
    for (const chunk of chunks) {
      // Each chunk applies only if none of its keys changed since we read them.
      const res = await store.txn({
        compare: chunk.map((r) => ({
          key: r.key,
          target: 'mod' as const,
          op: '==' as const,
          value: previous.get(r.key)?.modRevision ?? 0,
        })),
        success: chunk.map((r): TxnOp => ({ type: 'put', key: r.key, value: r.value })),
      });
      if (!res.succeeded)
        throw new StorctlError('CONFLICT', 'keys changed while loading (is a core agent writing?)', 4);
      done.push(chunk);
    }
  } catch (err) {
    for (const chunk of done.reverse()) {
      await store.txn({
        compare: [],
        success: chunk.map((r): TxnOp => {
          const before = previous.get(r.key);
          return before ? { type: 'put', key: r.key, value: before.value } : { type: 'delete', key: r.key };
        }),
      });
    }
    throw err;
  }
  return { written: plan.records.length };
}
