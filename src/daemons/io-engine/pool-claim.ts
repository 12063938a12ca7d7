import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isSameProcessAlive, procStat } from '../../lib/mount/processes.js';
import { precondition } from './errors.js';

/** In a pool directory: which io-engine process has the pool loaded. */
export const POOL_CLAIM_FILE = 'io-engine.pid';

interface Claimant {
  pid: number;
  /** Start time (clock ticks since boot, /proc): a PID the kernel reused is not the claimant. */
  startTime: string;
  node: string;
}

/**
 * Claim a pool directory for this process before it is imported or created, as SPDK holds a pool's
 * disk open exclusively. Two io-engines on one directory would each write replica files and
 * metadata the other does not know of (an `up` killed by a closed terminal leaves its io-engines
 * running; the next `up` starts new ones on the same directories): a live claimant refuses the
 * pool, a dead one's claim is taken over. Returns the release, to call when the pool is closed.
 */
export async function claimPoolDir(disk: string, node: string): Promise<() => Promise<void>> {
  const file = join(disk, POOL_CLAIM_FILE);
  const me: Claimant = { pid: process.pid, startTime: (await procStat(process.pid))?.startTime ?? '', node };
  const release = async () => {
    const held = await readClaim(file);
    if (held?.pid === me.pid && held.startTime === me.startTime) await rm(file, { force: true });
  };
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, `${JSON.stringify(me)}\n`, { flag: 'wx', mode: 0o600 });
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const held = await readClaim(file);
    if (held && held.pid === me.pid && held.startTime === me.startTime) return release;
    if (held && (await isSameProcessAlive(held.pid, held.startTime)))
      throw precondition(
        `pool directory ${disk} is in use by another io-engine (pid ${held.pid}, node '${held.node}'); stop that process first (two io-engines on one pool would overwrite each other's data)`,
      );
    // Its claimant is gone (killed, crashed) or the file is unreadable: take the pool over.
    if (attempt > 0)
      throw precondition(`pool directory ${disk}: cannot take over the claim in ${file}; remove it by hand`);
    await rm(file, { force: true });
  }
}

async function readClaim(file: string): Promise<Claimant | null> {
  try {
    const v = JSON.parse(await readFile(file, 'utf8')) as Partial<Claimant>;
    return typeof v.pid === 'number' && typeof v.startTime === 'string'
      ? { pid: v.pid, startTime: v.startTime, node: String(v.node ?? '') }
      : null;
  } catch {
    return null;
  }
}
