import { randomBytes } from 'node:crypto';
import { link, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { withoutPath } from './errno.js';
import { isSameProcessAlive, procStat } from './mount/processes.js';

/** The process a claim names, and what it said about itself (its node, its socket …). */
export type Claimant<D> = D & {
  pid: number;
  /** Start time (clock ticks since boot, /proc): a PID the kernel reused is not the claimant. */
  startTime: string;
};

/** A claim this process holds; `release` removes it (call it when the directory is let go). */
export interface HeldClaim {
  file: string;
  release(): Promise<void>;
}

/**
 * Claim a directory for this process alone (a pool directory for one io-engine, a state directory
 * for one csi-node): while the claimant lives, every other claim is refused with `refuse(holder)`;
 * a dead claimant's claim is taken over.
 *
 * Claims are files `<name>.<generation>`, each made whole under its final name by link(2), which
 * fails when the name exists: of two processes claiming at once, one makes the next generation and
 * the other then finds it held. Taking over a dead claim is making the generation after it, so two
 * processes taking over the same dead claim cannot both win either (a single claim file that each
 * removed and wrote again could be removed by the second after the first had written it).
 */
export async function claimDirectory<D extends object>(
  dir: string,
  name: string,
  details: D,
  refuse: (holder: Claimant<D>) => Error,
): Promise<HeldClaim> {
  const me = { ...details, pid: process.pid, startTime: (await procStat(process.pid))?.startTime ?? '' };
  const tmp = join(dir, `.${name}.${process.pid}-${randomBytes(4).toString('hex')}`);
  await writeFile(tmp, `${JSON.stringify(me)}\n`, { flag: 'wx', mode: 0o600 }).catch(
    (err: NodeJS.ErrnoException) => {
      // Said without the temporary file's random name, so the same failure reads the same each time.
      throw Object.assign(new Error(`cannot claim ${dir}: ${withoutPath(err)}`), {
        code: err.code,
      });
    },
  );
  try {
    for (let attempt = 0; attempt < 100; attempt++) {
      const generations = await generationsOf(dir, name);
      const top = generations.at(-1);
      if (top !== undefined) {
        const held = await readClaim<D>(join(dir, `${name}.${top}`));
        if (held === 'gone') continue; // released meanwhile: look again
        if (held && held.pid === me.pid && held.startTime === me.startTime)
          return heldClaim(dir, name, top, me);
        if (held && (await isSameProcessAlive(held.pid, held.startTime))) throw refuse(held);
      }
      const next = (top ?? 0) + 1;
      try {
        await link(tmp, join(dir, `${name}.${next}`));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue; // another process was first
        throw err;
      }
      // The generations below are claims of processes gone (or unreadable ones): no longer anyone's.
      for (const g of generations) await rm(join(dir, `${name}.${g}`), { force: true });
      return heldClaim(dir, name, next, me);
    }
    throw new Error(
      `cannot claim ${dir}: its claim files (${name}.N) keep changing; is something looping on it?`,
    );
  } finally {
    await rm(tmp, { force: true });
  }
}

/** The live process that holds `dir`'s claim, or null when none does (never claimed, or its claimant is gone). */
export async function liveClaimant<D extends object>(dir: string, name: string): Promise<Claimant<D> | null> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const top = (await generationsOf(dir, name)).at(-1);
    if (top === undefined) return null;
    const held = await readClaim<D>(join(dir, `${name}.${top}`));
    if (held === 'gone') continue;
    return held && (await isSameProcessAlive(held.pid, held.startTime)) ? held : null;
  }
  return null;
}

function heldClaim(dir: string, name: string, generation: number, me: { pid: number; startTime: string }) {
  const file = join(dir, `${name}.${generation}`);
  return {
    file,
    release: async () => {
      const held = await readClaim(file);
      if (held && held !== 'gone' && held.pid === me.pid && held.startTime === me.startTime)
        await rm(file, { force: true });
    },
  };
}

async function generationsOf(dir: string, name: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const prefix = `${name}.`;
  return entries
    .filter((e) => e.startsWith(prefix) && /^[1-9]\d{0,14}$/.test(e.slice(prefix.length)))
    .map((e) => Number(e.slice(prefix.length)))
    .sort((a, b) => a - b);
}

/** A claim file's claimant; null when it is not one (hand-edited, damaged), 'gone' when removed. */
async function readClaim<D>(file: string): Promise<Claimant<D> | null | 'gone'> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  try {
    const v = JSON.parse(text) as Claimant<D>;
    return Number.isSafeInteger(v.pid) && typeof v.startTime === 'string' ? v : null;
  } catch {
    return null;
  }
}
