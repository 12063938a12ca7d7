import { type AppNodeSpec, appNodeSpec } from '../../../lib/specs/app-node.js';
import { typePrefix } from '../../../lib/store/keys.js';
import type { CoreContext } from '../context.js';
import { notFound } from '../svc-error.js';

/**
 * App nodes (docs/mayastor-compat.md §1.14): CSI nodes register themselves every few minutes, so the records are
 * read from the store on request rather than cached, and registrations write no event (they would
 * flood the bounded log). Writes go through the lease-guarded writer like every core write.
 */

export async function listAppNodes(ctx: CoreContext): Promise<AppNodeSpec[]> {
  const { registry } = ctx;
  const { kvs } = await registry.store.range(typePrefix(registry.space, 'AppNodeSpec'));
  const out: AppNodeSpec[] = [];
  for (const kv of kvs) {
    try {
      out.push(appNodeSpec.decode(kv.key, kv.value));
    } catch (err) {
      ctx.log.warn({ key: kv.key, err: (err as Error).message }, 'undecodable AppNodeSpec skipped');
    }
  }
  return out;
}

export async function getAppNode(ctx: CoreContext, id: string): Promise<AppNodeSpec> {
  const key = ctx.registry.key('AppNodeSpec', id);
  const kv = await ctx.registry.store.get(key);
  if (!kv) throw notFound('app node', id, 'AppNode');
  return appNodeSpec.decode(key, kv.value);
}

/** Register (or re-register with a new endpoint / labels) an app node. */
export async function registerAppNode(ctx: CoreContext, spec: AppNodeSpec): Promise<void> {
  const { registry } = ctx;
  await registry.exclusive('app-node', spec.id, () =>
    registry.writer.write([{ key: registry.key('AppNodeSpec', spec.id), value: appNodeSpec.encode(spec) }]),
  );
}

export async function deregisterAppNode(ctx: CoreContext, id: string): Promise<void> {
  const { registry } = ctx;
  await registry.exclusive('app-node', id, async () => {
    const key = registry.key('AppNodeSpec', id);
    if (!(await registry.store.get(key))) throw notFound('app node', id, 'AppNode');
    await registry.writer.write([], [key]);
  });
}
