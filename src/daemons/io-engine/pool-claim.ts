import { claimDirectory } from '../../lib/process-claim.js';
import { precondition } from './errors.js';

/** In a pool directory: the claim files (`io-engine.claim.N`) naming the io-engine that has the pool loaded. */
export const POOL_CLAIM = 'io-engine.claim';

/**
 * Claim a pool directory for this process before it is imported or created, as SPDK holds a pool's
 * disk open exclusively. Two io-engines on one directory would each write replica files and
 * metadata the other does not know of (an `up` killed by a closed terminal leaves its io-engines
 * running; the next `up` starts new ones on the same directories): a live claimant refuses the
 * pool, a dead one's claim is taken over. Returns the release, to call when the pool is closed.
 */
export async function claimPoolDir(disk: string, node: string): Promise<() => Promise<void>> {
  const claim = await claimDirectory(disk, POOL_CLAIM, { node }, (held) =>
    precondition(
      `pool directory ${disk} is in use by another io-engine (pid ${held.pid}, node '${held.node}'); stop that process first (two io-engines on one pool would overwrite each other's data)`,
    ),
  );
  return claim.release;
}
