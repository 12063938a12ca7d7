import { cloneSpec, type PoolSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { dirty, notFound, SvcError } from '../svc-error.js';

/**
 * Pool labels (`PUT /pools/{id}/label/{key}={value}`, `DELETE /pools/{id}/label/{key}`). Pool
 * operations are stored after the change (docs/mayastor-compat.md §1.5, log_op (false, true)). As Mayastor's
 * pool-label feature tests expect: a key held with another value and no overwrite, or an unlabel
 * of an absent key, is FailedPrecondition (412); the same label again changes nothing.
 */
async function editPool(
  ctx: CoreContext,
  id: string,
  edit: (p: PoolSpec) => boolean,
  event: () => string,
): Promise<PoolSpec> {
  const { registry } = ctx;
  return registry.exclusive('pool', id, async () => {
    const cached = registry.pools.get(id);
    if (!cached) throw notFound('pool', id, 'Pool');
    if (cached.operation) throw dirty('pool', id);
    const spec = cloneSpec(cached);
    if (!edit(spec)) return spec;
    await registry.persist({
      pools: [spec],
      events: [makeEvent('pool', id, event().split(' ')[0], event())],
    });
    return spec;
  });
}

export function labelPool(ctx: CoreContext, id: string, key: string, value: string, overwrite: boolean) {
  return editPool(
    ctx,
    id,
    (p) => {
      const labels = p.labels ?? {};
      if (Object.hasOwn(labels, key) && labels[key] === value) return false;
      if (Object.hasOwn(labels, key) && !overwrite)
        throw new SvcError(
          'FailedPrecondition',
          `pool '${id}' already has label ${key}=${labels[key]}; pass overwrite to replace it`,
          `Label ${key} exists on pool ${id} with value ${labels[key]}`,
        );
      p.labels = { ...labels, [key]: value };
      return true;
    },
    () => `Labelled ${key}=${value}`,
  );
}

export function unlabelPool(ctx: CoreContext, id: string, key: string) {
  return editPool(
    ctx,
    id,
    (p) => {
      if (!p.labels || !Object.hasOwn(p.labels, key))
        throw new SvcError(
          'FailedPrecondition',
          `pool '${id}' has no label '${key}'`,
          `Label ${key} not found on pool ${id}`,
        );
      const { [key]: _gone, ...rest } = p.labels;
      p.labels = rest;
      return true;
    },
    () => `Unlabelled ${key}`,
  );
}
