import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { procStat } from '../../src/lib/mount/processes.js';
import { claimDirectory, liveClaimant } from '../../src/lib/process-claim.js';
import { waitFor } from '../helpers/wait.js';

const CLAIM_MODULE = fileURLToPath(new URL('../../dist/lib/process-claim.js', import.meta.url));

/**
 * A process that prints `ready`, claims `dir` as soon as `go` exists, prints `won` or
 * `refused <holder pid>`, and holds what it won until its stdin closes.
 */
function claimer(dir: string, go: string): ChildProcess & { ready: Promise<unknown>; said: Promise<string> } {
  const script = `
    import { existsSync } from 'node:fs';
    const { claimDirectory } = await import(${JSON.stringify(CLAIM_MODULE)});
    console.log('ready');
    while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 1));
    try {
      await claimDirectory(${JSON.stringify(dir)}, 'x.claim', { who: process.pid }, (h) => new Error('refused ' + h.pid));
      console.log('won');
    } catch (err) { console.log(err.message); }
    process.stdin.resume();
    process.stdin.on('end', () => process.exit(0));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d;
  });
  const line = (n: number) => () => out.split('\n')[n] || undefined;
  const opts = { what: `claimer ${child.pid} answering`, timeoutMs: 30_000 };
  return Object.assign(child, { ready: waitFor(line(0), opts), said: waitFor(line(1), opts) });
}

/** A claim naming a process that has ended. */
async function deadClaim(file: string): Promise<void> {
  const gone = spawn('true');
  const pid = gone.pid!;
  await new Promise((r) => gone.on('exit', r));
  await writeFile(file, `${JSON.stringify({ who: 0, pid, startTime: '1' })}\n`);
}

describe('process claim: one live process per directory', () => {
  let dir: string;
  let other: ChildProcess | undefined;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-claim-'));
  });
  afterEach(async () => {
    const ended = (c: ChildProcess) =>
      c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : once(c, 'exit');
    for (const c of children.splice(0)) {
      c.stdin?.end();
      await ended(c);
    }
    if (other) {
      other.kill('SIGKILL');
      await ended(other);
      other = undefined;
    }
    for (const f of await readdir(dir)) await rm(join(dir, f), { recursive: true, force: true });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('claims, names the claimant while it holds, and is free again once released', async () => {
    const refuse = () => new Error('unexpected');
    const claim = await claimDirectory(dir, 'x.claim', { node: 'n1' }, refuse);
    expect(claim.file).toBe(join(dir, 'x.claim.1'));
    expect(await liveClaimant(dir, 'x.claim')).toMatchObject({ pid: process.pid, node: 'n1' });
    // Claiming again from the same process is the same claim.
    expect((await claimDirectory(dir, 'x.claim', { node: 'n1' }, refuse)).file).toBe(claim.file);
    await claim.release();
    expect(await readdir(dir)).toEqual([]);
    expect(await liveClaimant(dir, 'x.claim')).toBeNull();
  });

  it('a directory it cannot write in fails the same way every time (core says each failure once)', async () => {
    const missing = join(dir, 'gone');
    const attempt = () =>
      claimDirectory(missing, 'x.claim', {}, () => new Error('unexpected')).then(
        () => null,
        (err: NodeJS.ErrnoException) => err,
      );
    const [a, b] = [await attempt(), await attempt()];
    expect(a?.message).toBe(`cannot claim ${missing}: ENOENT: no such file or directory`);
    expect(b?.message).toBe(a?.message);
    expect(a?.code).toBe('ENOENT');
  });

  it('refuses a claim a live process holds, with what that process said about itself', async () => {
    other = spawn('sleep', ['600'], { stdio: 'ignore' });
    const started = await waitFor(() => procStat(other!.pid!), { what: 'sleep running' });
    await writeFile(
      join(dir, 'x.claim.3'),
      JSON.stringify({ node: 'n2', pid: other.pid, startTime: started.startTime }),
    );
    await expect(
      claimDirectory(dir, 'x.claim', { node: 'n1' }, (h) => new Error(`held by ${h.pid} on ${h.node}`)),
    ).rejects.toThrow(`held by ${other.pid} on n2`);
    expect(await readdir(dir)).toEqual(['x.claim.3']);
  });

  it('takes over the claim of a process that is gone, or a damaged one, and removes it', async () => {
    await deadClaim(join(dir, 'x.claim.4'));
    const claim = await claimDirectory(dir, 'x.claim', {}, () => new Error('unexpected'));
    expect(claim.file).toBe(join(dir, 'x.claim.5'));
    expect(await readdir(dir)).toEqual(['x.claim.5']);
    await claim.release();

    await writeFile(join(dir, 'x.claim.9'), 'not json');
    expect(await liveClaimant(dir, 'x.claim')).toBeNull();
    const again = await claimDirectory(dir, 'x.claim', {}, () => new Error('unexpected'));
    expect(await readdir(dir)).toEqual(['x.claim.10']);
    await again.release();
  });

  it('of processes taking over one dead claim at the same instant, exactly one wins', {
    timeout: 60_000,
  }, async () => {
    await deadClaim(join(dir, 'x.claim.1'));
    const go = join(dir, 'go');
    const racers = Array.from({ length: 6 }, () => claimer(dir, go));
    children.push(...racers);
    // Every racer has loaded the module and polls for `go` before it appears.
    await Promise.all(racers.map((r) => r.ready));
    await writeFile(go, '');
    const said = await Promise.all(racers.map((r) => r.said));
    const winners = racers.filter((_, i) => said[i] === 'won');
    expect(winners).toHaveLength(1);
    const winner = winners[0].pid;
    for (const s of said.filter((s) => s !== 'won')) expect(s).toBe(`refused ${winner}`);
    expect(await liveClaimant(dir, 'x.claim')).toMatchObject({ pid: winner, who: winner });
    const claims = (await readdir(dir)).filter((f) => f.startsWith('x.claim.'));
    expect(claims).toEqual(['x.claim.2']);
    expect(JSON.parse(await readFile(join(dir, 'x.claim.2'), 'utf8')).pid).toBe(winner);
  });
});
