import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loopsOf } from '../../../src/lib/mount/loop-devices.js';
import { isSameProcessAlive, procStat } from '../../../src/lib/mount/processes.js';
import { cleanCsiNodeEntry } from '../../../src/lib/orphans/csi-node-cleanup.js';
import { readCsiNodeState } from '../../../src/lib/orphans/csi-node-state.js';

/**
 * The orphans cleanup touches only what lies where csi-node works: a state entry naming a loop
 * device's file outside the csi-node state dir (a hand-edited or foreign state file) leaves that
 * loop device bound and the entry in place, and says why.
 */
describe('csi-node cleanup stays inside the state dir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-cleanup-bounds-'));
  const outside = join(dir, 'elsewhere', 'disk.img');
  afterAll(() => {
    for (const loop of execFileSync('losetup', ['-j', outside], { encoding: 'utf8' }).split('\n'))
      if (loop.includes(':')) execFileSync('losetup', ['-d', loop.split(':')[0]]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves a loop device bound to a file outside the state dir alone', async () => {
    const stateDir = join(dir, 'csi-node');
    mkdirSync(stateDir, { recursive: true });
    mkdirSync(join(dir, 'elsewhere'));
    writeFileSync(outside, Buffer.alloc(1 << 20));
    const loop = execFileSync('losetup', ['-f', '--show', outside], { encoding: 'utf8' }).trim();
    const volumeId = crypto.randomUUID();
    const entry = {
      volumeId,
      publishes: {},
      stagedAt: new Date().toISOString(),
      device: { kind: 'fuse-loop', device: loop, file: outside },
    };
    writeFileSync(
      join(stateDir, 'state.json'),
      JSON.stringify({ version: 1, volumes: { [volumeId]: entry } }),
      { mode: 0o600 },
    );
    const read = (await readCsiNodeState(stateDir))!.volumes.find((v) => v.volumeId === volumeId)!;

    const result = await cleanCsiNodeEntry(read, stateDir, [join(dir, 'kubelet')]);

    expect(result.left).toEqual([`loop devices of ${outside}: not below ${stateDir}`]);
    expect(await loopsOf(outside)).toEqual([loop]);
    expect(Object.keys(JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')).volumes)).toEqual([
      volumeId,
    ]);
  });

  it('kills a left-behind proxy that does not stop on SIGTERM, and says so', async () => {
    // A proxy with requests in flight to a deleted target waits out their timeout on SIGTERM.
    const stateDir = join(dir, 'csi-node-proxy');
    mkdirSync(stateDir, { recursive: true });
    const stuck = spawn(
      process.execPath,
      ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready')"],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = once(stuck, 'exit');
    try {
      await once(stuck.stdout!, 'data');
      const pid = stuck.pid!;
      const pidStartTime = (await procStat(pid))!.startTime;
      const volumeId = crypto.randomUUID();
      const entry = { volumeId, publishes: {}, proxy: { pid, pidStartTime } };
      writeFileSync(
        join(stateDir, 'state.json'),
        JSON.stringify({ version: 1, volumes: { [volumeId]: entry } }),
        { mode: 0o600 },
      );
      const read = (await readCsiNodeState(stateDir))!.volumes[0];

      const result = await cleanCsiNodeEntry(read, stateDir, [join(dir, 'kubelet')]);

      expect(result.done).toContain(`killed proxy pid ${pid} (it did not stop on SIGTERM)`);
      expect(result.left).toEqual([]);
      expect(await exited).toEqual([null, 'SIGKILL']);
      expect(await isSameProcessAlive(pid, pidStartTime)).toBe(false);
    } finally {
      if (stuck.exitCode === null && stuck.signalCode === null) stuck.kill('SIGKILL');
    }
  }, 30_000);
});
