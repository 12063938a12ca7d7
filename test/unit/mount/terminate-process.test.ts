import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { isSameProcessAlive, procStat, terminateProcess } from '../../../src/lib/mount/processes.js';

const started: ChildProcess[] = [];

/** A node child that says `ready` once its handlers are set; `ignoreTerm`: it shrugs off SIGTERM. */
async function child(
  ignoreTerm: boolean,
): Promise<{ pid: number; startTime: string; exited: Promise<unknown> }> {
  const code = `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ''} setInterval(() => {}, 1000); console.log('ready');`;
  const c = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.push(c);
  const exited = once(c, 'exit');
  await once(c.stdout!, 'data');
  const st = await procStat(c.pid!);
  return { pid: c.pid!, startTime: st!.startTime, exited };
}

afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe('terminateProcess', () => {
  it('ends a process with SIGTERM when that is enough', async () => {
    const p = await child(false);
    expect(await terminateProcess(p.pid, p.startTime, 5000)).toBe('terminated');
    expect(await p.exited).toEqual([null, 'SIGTERM']);
  });

  it('kills a process that ignores SIGTERM once the grace time is over', async () => {
    const p = await child(true);
    expect(await terminateProcess(p.pid, p.startTime, 300)).toBe('killed');
    expect(await p.exited).toEqual([null, 'SIGKILL']);
  });

  it('never signals a process whose start time is not the recorded one (a reused PID)', async () => {
    const p = await child(false);
    expect(await terminateProcess(p.pid, `${Number(p.startTime) + 1}`, 300)).toBe('gone');
    expect(await isSameProcessAlive(p.pid, p.startTime)).toBe(true);
  });

  it('says gone for a process that has already ended', async () => {
    const p = await child(false);
    process.kill(p.pid, 'SIGKILL');
    await p.exited;
    expect(await terminateProcess(p.pid, p.startTime, 300)).toBe('gone');
  });
});
