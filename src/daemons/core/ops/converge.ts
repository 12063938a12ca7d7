import { operationName, type VolumeSpec } from '../../../lib/specs/index.js';
import { makeEvent } from '../events.js';
import type { Registry } from '../registry.js';
import { dirty } from '../svc-error.js';
import { retrySettle } from './settle.js';

/**
 * Retries that converge (issue 16): a request answered 507 ("may or may not have been applied") is
 * retried with the same parameters, and the retry must end where the first attempt would have.
 * A create that was in fact made returns what exists — only when what exists was made with the same
 * parameters; anything else is a conflict that names the difference.
 */

/** JSON with object keys sorted: equal values compare equal whatever their key order or prototype. */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, (x as Record<string, unknown>)[k]]),
        )
      : x,
  );
}

/** The fields of a volume spec a create request sets, as the request would set them. */
function createFields(v: VolumeSpec): Record<string, unknown> {
  return {
    size: v.size,
    replicas: v.num_replicas,
    thin: v.thin,
    policy: v.policy,
    topology: v.topology ?? null,
    labels: v.labels ?? null,
    affinity_group: v.affinity_group ?? null,
    max_snapshots: v.max_snapshots ?? null,
    content_source: v.content_source ?? null,
  };
}

/**
 * How the existing volume differs from the one `wanted` describes (built by the same code from the
 * retried request): `field stored X, requested Y`, one per differing field; empty when identical.
 */
export function createDifferences(existing: VolumeSpec, wanted: VolumeSpec): string[] {
  const a = createFields(existing);
  const b = createFields(wanted);
  const show = (v: unknown) => {
    const s = JSON.stringify(v);
    return s.length > 80 ? `${s.slice(0, 77)}...` : s;
  };
  return Object.keys(a)
    .filter((k) => canonicalJson(a[k]) !== canonicalJson(b[k]))
    .map((k) => `${k} is ${show(a[k])}, requested ${show(b[k])}`);
}

/**
 * A volume with a pending operation left by a failed commit or rollback write: write it now (the
 * caller holds the volume's lock), so a retry after the store is back does not wait for the
 * reconciler. Still failing (the store is still out) → 507 StoreDirty, retryable.
 */
export async function settleDirtyVolume(registry: Registry, id: string): Promise<void> {
  const v = registry.volumes.get(id);
  if (!v?.operation) return;
  const what = operationName(v.operation.operation);
  const done = v.operation.result === true ? 'committed' : 'rolled back';
  const event = makeEvent('volume', id, 'Recovered', `pending ${what} ${done} on a retried request`);
  const settled = await retrySettle(registry, { kind: 'volume', id }, [event]).catch(() => false);
  if (!settled || registry.volumes.get(id)?.operation) throw dirty('volume', id);
}
