import { type NexusInfo, nexusInfo } from '../../../lib/specs/index.js';
import { nexusInfoKey } from '../../../lib/store/keys.js';
import type { CoreContext } from '../context.js';
import { SvcError } from '../svc-error.js';

/**
 * Fence a volume's old target before a new one serves (HA switchover): set `do_self_shutdown` in
 * the old nexus's NexusInfo. An io-engine that was only stalled or cut off checks it on its next
 * store contact and shuts that nexus down; a write it tries before that fails on the replicas the
 * new nexus reserved (io-engine reservation.ts). Compare-and-swap against the io-engine's own
 * writes of the record, guarded by core's lease like every core write.
 */
export async function fenceNexus(ctx: CoreContext, volumeId: string, nexusId: string): Promise<void> {
  const { store, space, writer } = ctx.registry;
  const key = nexusInfoKey(space, nexusId, volumeId);
  for (let attempt = 0; attempt < 20; attempt++) {
    const kv = await store.get(key);
    // No record: the nexus never got as far as serving I/O that needed one; the replicas'
    // reservations still fence it. (An empty record would also claim no replica is healthy.)
    if (!kv) return;
    const info: NexusInfo = nexusInfo.decode(key, kv.value);
    if (info.do_self_shutdown) return;
    info.do_self_shutdown = true;
    const res = await store.txn({
      compare: [writer.leaseGuard, { key, target: 'mod', op: '==', value: kv.modRevision }],
      success: [{ type: 'put', key, value: nexusInfo.encode(info) }],
    });
    if (res.succeeded) return;
    await writer.verify();
    if (writer.leaseLost)
      throw new SvcError('FailedPersist', 'core lost its store lease; it no longer writes');
  }
  throw new SvcError('FailedPersist', `could not fence nexus ${nexusId}: ${key} kept changing`);
}
