import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { procStat } from '../../../src/lib/mount/processes.js';
import { liveClaimant } from '../../../src/lib/process-claim.js';
import { waitFor } from '../../helpers/wait.js';
import { code, type RunningEngine, startEngine } from './engines.js';

const MiB = 1 << 20;

/**
 * One pool directory, one io-engine: a second io-engine on the same directory (an `up` killed by a
 * closed terminal leaves its io-engines running, and the next `up` starts new ones there) is
 * refused the pool while the first holds it, and takes it over once the first is gone, killed or
 * not. Each engine here has a store of its own, so only the directory is shared.
 */
describe('io-engine: a pool directory is claimed by one io-engine at a time', () => {
  let dir: string;
  let first: RunningEngine | undefined;
  let second: RunningEngine | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-pool-claim-'));
  });
  afterAll(async () => {
    await first?.stop();
    await second?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a pool another live io-engine holds, and takes it over from a killed one', async () => {
    first = await startEngine(dir, 'node-1', { storeUrl: `sqlite:${join(dir, 'a.db')}` });
    second = await startEngine(dir, 'node-1', { storeUrl: `sqlite:${join(dir, 'b.db')}` });
    expect(second.poolDir).toBe(first.poolDir);
    await first.client.createPool({ name: 'p1', capacity: 64 * MiB });
    const poolDir = join(first.poolDir, 'p1');
    const claimant = () => liveClaimant(poolDir, 'io-engine.claim');
    expect(await claimant()).toMatchObject({ pid: first.proc.child.pid, node: 'node-1' });

    expect(await code(second.client.importPool({ name: 'p1' }))).toMatch(
      new RegExp(
        `^FAILED_PRECONDITION: .*in use by another io-engine \\(pid ${first.proc.child.pid}, node 'node-1'\\)`,
      ),
    );
    expect(await code(second.client.createPool({ name: 'p1', capacity: 64 * MiB }))).toMatch(
      /^FAILED_PRECONDITION: .*in use by another io-engine/,
    );

    // Exported, the pool is free again; imported back, it is claimed again.
    await first.client.exportPool('p1');
    expect((await readdir(poolDir)).filter((f) => f.startsWith('io-engine.claim'))).toEqual([]);
    await first.client.importPool({ name: 'p1' });
    expect(await claimant()).toMatchObject({ pid: first.proc.child.pid });

    // kill -9 leaves the claim behind, naming a process that is gone: the pool is taken over.
    await first.stop('SIGKILL');
    first = undefined;
    const pool = await second.client.importPool({ name: 'p1' });
    expect(pool.name).toBe('p1');
    expect(await claimant()).toMatchObject({ pid: second.proc.child.pid });
    // The dead engine's claim is gone with it: one claim file, the live engine's.
    expect((await readdir(poolDir)).filter((f) => f.startsWith('io-engine.claim'))).toHaveLength(1);

    // An io-engine of an earlier version (one `io-engine.pid` file, no generations) that still runs
    // keeps the pool from this one; once it is gone its file is removed on the next claim.
    await second.client.exportPool('p1');
    const earlier = spawn('sleep', ['600'], { stdio: 'ignore' });
    try {
      const started = await waitFor(() => procStat(earlier.pid!), { what: 'stand-in running' });
      const legacy = join(poolDir, 'io-engine.pid');
      await writeFile(
        legacy,
        JSON.stringify({ pid: earlier.pid, startTime: started.startTime, node: 'node-0' }),
      );
      expect(await code(second.client.importPool({ name: 'p1' }))).toMatch(
        new RegExp(
          `^FAILED_PRECONDITION: .*in use by another io-engine \\(pid ${earlier.pid}, node 'node-0'\\)`,
        ),
      );
      expect((await readdir(poolDir)).filter((f) => f.startsWith('io-engine.claim'))).toEqual([]);
      earlier.kill('SIGKILL');
      await once(earlier, 'exit');
      expect((await second.client.importPool({ name: 'p1' })).name).toBe('p1');
      expect(existsSync(legacy)).toBe(false);
    } finally {
      earlier.kill('SIGKILL');
    }
  });
});
