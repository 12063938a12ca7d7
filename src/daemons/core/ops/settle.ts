import { cloneSpec } from '../../../lib/specs/index.js';
import type { Registry } from '../registry.js';

/** One store write of core: what `registry.persist` takes. */
export type SpecChange = Parameters<Registry['persist']>[0];

/** The spec whose logged operation a commit or rollback ends. */
export interface OpTarget {
  kind: 'volume' | 'replica' | 'nexus' | 'snapshot';
  id: string;
}

interface PendingSettle {
  result: boolean;
  change: SpecChange;
}

/** Per registry (one core): commits and rollbacks whose write failed, for the dirty-spec reconciler. */
const pendingByRegistry = new WeakMap<Registry, Map<string, PendingSettle>>();

function pendingOf(registry: Registry): Map<string, PendingSettle> {
  let m = pendingByRegistry.get(registry);
  if (!m) {
    m = new Map();
    pendingByRegistry.set(registry, m);
  }
  return m;
}

const keyOf = (t: OpTarget) => `${t.kind}/${t.id}`;

function cachedOperation(registry: Registry, t: OpTarget): { result: boolean | null } | null | undefined {
  switch (t.kind) {
    case 'volume':
      return registry.volumes.get(t.id)?.operation;
    case 'replica':
      return registry.replicas.get(t.id)?.operation;
    case 'nexus':
      return registry.nexuses.get(t.id)?.operation;
    case 'snapshot':
      return registry.snapshots.get(t.id)?.metadata.operation as
        | { result: boolean | null }
        | null
        | undefined;
  }
}

/**
 * Record the io-engine action's outcome in the cached spec's pending operation (docs/mayastor-compat.md §1.5:
 * `result` true = the action succeeded, false = it failed). Only in memory: if the commit or
 * rollback write then fails, the spec stays dirty with a known result, and the dirty-spec reconciler
 * completes a `true` instead of rolling it back.
 */
export function markResult(registry: Registry, target: OpTarget, result: boolean): void {
  const op = cachedOperation(registry, target);
  if (op) op.result = result;
}

/**
 * End a logged operation: mark its result, then write `change` (the commit, or the rollback when
 * `result` is false). A failed write keeps the change for the dirty-spec reconciler to retry and
 * rethrows (507 FailedPersist for the request).
 */
export async function settleOp(
  registry: Registry,
  target: OpTarget | OpTarget[],
  result: boolean,
  change: SpecChange,
): Promise<void> {
  const targets = Array.isArray(target) ? target : [target];
  for (const t of targets) markResult(registry, t, result);
  const pending = pendingOf(registry);
  try {
    await registry.persist(change);
    for (const t of targets) pending.delete(keyOf(t));
  } catch (err) {
    // Every spec of the operation leads to the same write: whichever the reconciler meets first.
    const kept = { result, change: cloneSpec(change) };
    for (const t of targets) pending.set(keyOf(t), kept);
    throw err;
  }
}

/** A rollback: like settleOp(false) but never throws (the error the request gets is the action's). */
export function rollbackOp(
  registry: Registry,
  target: OpTarget | OpTarget[],
  change: SpecChange,
): Promise<void> {
  return settleOp(registry, target, false, change).catch(() => {});
}

/** The failed commit/rollback write of this spec's operation, if its cached result still matches. */
export function pendingSettle(registry: Registry, target: OpTarget): PendingSettle | undefined {
  const p = pendingOf(registry).get(keyOf(target));
  const op = cachedOperation(registry, target);
  if (!p || !op || op.result !== p.result) return undefined;
  return p;
}

/**
 * The dirty-spec reconciler's retry: write the kept commit/rollback of this spec's operation (with
 * `events`). False when there is none to retry (a crash leftover, or the result changed since).
 */
export async function retrySettle(
  registry: Registry,
  target: OpTarget,
  events: NonNullable<SpecChange['events']>,
): Promise<boolean> {
  const p = pendingSettle(registry, target);
  if (!p) return false;
  await registry.persist({ ...p.change, events: [...(p.change.events ?? []), ...events] });
  const pending = pendingOf(registry);
  for (const [k, v] of pending) if (v === p) pending.delete(k);
  return true;
}

/** Forget a pending write (the spec was settled otherwise). */
export function forgetSettle(registry: Registry, target: OpTarget): void {
  pendingOf(registry).delete(keyOf(target));
}
