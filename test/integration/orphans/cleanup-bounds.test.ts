import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loopsOf } from '../../../src/lib/mount/loop-devices.js';
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
});
