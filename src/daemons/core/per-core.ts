import type { CoreContext } from './context.js';

/**
 * A map kept per core (per registry): in-memory reconciler state that a core started again in the
 * same process (the tests do) begins afresh, and that goes with its core.
 */
export function perCore<T>(): (ctx: CoreContext) => Map<string, T> {
  const of = new WeakMap<object, Map<string, T>>();
  return (ctx) => {
    let m = of.get(ctx.registry);
    if (!m) {
      m = new Map();
      of.set(ctx.registry, m);
    }
    return m;
  };
}
