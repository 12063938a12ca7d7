import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isSameProcessAlive } from '../../lib/mount/processes.js';
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
  const inUse = (held: { pid: number; node?: unknown }) =>
    precondition(
      `pool directory ${disk} is in use by another io-engine (pid ${held.pid}, node '${String(held.node ?? '')}'); stop that process first (two io-engines on one pool would overwrite each other's data)`,
    );
  const claim = await claimDirectory(disk, POOL_CLAIM, { node }, inUse);
  // An io-engine of an earlier version claims with one file of its own, which it still holds.
  const legacy = join(disk, LEGACY_POOL_CLAIM);
  const held = await readFile(legacy, 'utf8').then(
    (t) => JSON.parse(t) as { pid?: unknown; startTime?: unknown; node?: unknown },
    () => null,
  );
  if (held && Number.isSafeInteger(held.pid) && typeof held.startTime === 'string') {
    if (await isSameProcessAlive(held.pid as number, held.startTime)) {
      await claim.release();
      throw inUse({ pid: held.pid as number, node: held.node });
    }
  }
  if (held) await rm(legacy, { force: true });
  return claim.release;
}

/** The claim file of io-engines before claims had generations. */
const LEGACY_POOL_CLAIM = 'io-engine.pid';
