import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { procStat } from '../../../src/lib/mount/processes.js';
import { stageRequest } from '../../helpers/csi-client.js';
import { runStorctl, StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { FAST_CORE_FLAGS, newVolumeId, TestCluster } from '../core/cluster.js';
import { CsiNodeFixture } from '../csi-node/fixture.js';

const MiB = 1 << 20;

/**
 * A real csi-node's leftovers: a volume staged (path proxy → its FUSE file → loop device → ext4) and
 * published, csi-node killed -9, the volume deleted behind its back. `storctl orphans` names it,
 * and `--delete -y` undoes all of it: nothing of csi-node's is left on the machine.
 */
describe('storctl orphans and a real csi-node left behind', () => {
  let cluster: TestCluster | undefined;
  let node: CsiNodeFixture | undefined;
  afterEach(async () => {
    await node?.dispose();
    await cluster?.stop();
    node = undefined;
    cluster = undefined;
  });
  /** A one-io-engine cluster and a csi-node that asks its core. */
  async function startClusterAndNode(): Promise<{ c: TestCluster; n: CsiNodeFixture }> {
    const c = await TestCluster.start({ engines: 1, coreFlags: FAST_CORE_FLAGS });
    cluster = c;
    const n = new CsiNodeFixture(c.restUrl);
    node = n;
    await n.start();
    return { c, n };
  }
  /** `orphans --delete -y`: its outcome for the csi-node-volume, which must be deleted. */
  async function deleteCsiNodeOrphan(args: string[], c: TestCluster) {
    const deleted = await runStorctl([...args, '--delete', '-y'], { env: c.env });
    expect(deleted.code, deleted.stderr).toBe(0);
    const outcome = (
      JSON.parse(deleted.stdout) as { kind: string; outcome: { result: string; detail: string } }[]
    ).find((r) => r.kind === 'csi-node-volume')?.outcome;
    expect(outcome?.result, outcome?.detail).toBe('deleted');
    return outcome;
  }
  const orphansOf = (n: CsiNodeFixture) => [
    'orphans',
    '--csi-node-state',
    n.stateDir,
    '--csi-node-root',
    n.root,
  ];

  it('checks a csi-node that has staged nothing yet (its state file exists from its start)', {
    timeout: 60_000,
  }, async () => {
    const { c, n } = await startClusterAndNode();
    const listed = await runStorctl(orphansOf(n), { env: c.env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('No orphans found.');
    expect(listed.stderr).not.toContain('csi-node');
  });

  it('while csi-node runs, undoes the leftovers through it, so they do not come back at its next change', {
    timeout: 120_000,
  }, async () => {
    const { c, n } = await startClusterAndNode();
    const stage = async (id: string) => {
      const published = await c.createPublished(id, { size: 32 * MiB, replicas: 1, node: 'node-1' });
      const staging = join(n.root, 'plugins', id, 'globalmount');
      await n.csi!.node(
        'NodeStageVolume',
        stageRequest({ volumeId: id, staging, uri: published.state.target!.deviceUri }),
      );
      return staging;
    };
    const ghost = newVolumeId();
    const staging = await stage(ghost);
    // Deleted behind csi-node's back (an operator's --force): csi-node keeps it staged.
    await c.rest.deleteVolume(ghost);

    const args = [...orphansOf(n), '-o', 'json'];
    const outcome = await deleteCsiNodeOrphan(args, c);
    expect(outcome?.detail).toMatch(
      // A proxy with requests for the deleted target in flight may need SIGKILL.
      new RegExp(`^(stopped|killed) proxy pid \\d+[^;]*; unstaged ${staging} through csi-node$`),
    );
    expect(n.proc!.running).toBe(true);

    // csi-node writes its state again (another volume staged): the entry stays gone.
    await stage(newVolumeId());
    const state = JSON.parse(readFileSync(join(n.stateDir, 'state.json'), 'utf8'));
    expect(Object.keys(state.volumes)).not.toContain(ghost);
    expect((await runStorctl(args, { env: c.env })).stdout.trim()).toBe('[]');
  });

  it('refuses a second csi-node on a state directory a live one keeps', { timeout: 60_000 }, async () => {
    node = new CsiNodeFixture();
    await node.start();
    const second = secondCsiNode(node);
    expect(await second.wait()).toBe(4);
    expect(second.output).toContain(
      `csi-node pid ${node.proc!.child.pid} (unix://${node.socket}) already keeps`,
    );
    expect(node.proc!.running).toBe(true);
  });

  it('refuses a state directory a live csi-node of an earlier version keeps (its owner in state.json)', {
    timeout: 60_000,
  }, async () => {
    node = new CsiNodeFixture();
    const earlier = spawn('sleep', ['600'], { stdio: 'ignore' });
    try {
      const started = await waitFor(() => procStat(earlier.pid!), { what: 'stand-in running' });
      mkdirSync(node.stateDir, { recursive: true, mode: 0o700 });
      const owner = { pid: earlier.pid, pidStartTime: started.startTime, endpoint: 'unix:///earlier.sock' };
      writeFileSync(join(node.stateDir, 'state.json'), JSON.stringify({ version: 1, owner, volumes: {} }));
      const second = secondCsiNode(node);
      expect(await second.wait()).toBe(4);
      expect(second.output).toContain(`csi-node pid ${earlier.pid} (unix:///earlier.sock) already keeps`);
      // Refused, it holds no claim: the directory is free once the earlier csi-node is gone.
      expect(readdirSync(node.stateDir).filter((f) => f.startsWith('csi-node.claim'))).toEqual([]);
    } finally {
      earlier.kill('SIGKILL');
      await once(earlier, 'exit');
    }
  });

  it('finds the staged and published volume of a deleted volume and undoes mounts, loop device, FUSE and proxy', {
    timeout: 120_000,
  }, async () => {
    const { c, n } = await startClusterAndNode();
    const id = newVolumeId();
    const published = await c.createPublished(id, { size: 32 * MiB, replicas: 1, node: 'node-1' });
    const staging = join(n.root, 'plugins', id, 'globalmount');
    const target = join(n.root, 'pods', 'pod-1', 'volumes', id, 'mount');
    await n.csi!.node(
      'NodeStageVolume',
      stageRequest({ volumeId: id, staging, uri: published.state.target!.deviceUri }),
    );
    await n.csi!.node('NodePublishVolume', {
      volume_id: id,
      staging_target_path: staging,
      target_path: target,
      readonly: false,
      volume_capability: {
        mount: { fs_type: 'ext4', mount_flags: [] },
        access_mode: { mode: 'SINGLE_NODE_WRITER' },
      },
      publish_context: {},
      volume_context: {},
      secrets: {},
    });
    await n.crash();
    await c.rest.unpublishVolume(id, true);
    await c.rest.deleteVolume(id);
    expect((await n.leftovers()).length).toBeGreaterThan(0);

    const args = [...orphansOf(n), '-o', 'json'];
    const listed = await runStorctl(args, { env: c.env });
    expect(listed.code, listed.stderr).toBe(0);
    const rows = JSON.parse(listed.stdout) as { kind: string; id: string; reason: string; paths: string[] }[];
    const row = rows.find((r) => r.kind === 'csi-node-volume');
    expect(row?.id).toBe(id);
    expect(row?.reason).toContain(`still has volume ${id}, which does not exist`);
    expect(row?.paths).toEqual(expect.arrayContaining([`published at ${target}`, `staged at ${staging}`]));

    await deleteCsiNodeOrphan(args, c);
    expect(await n.leftovers()).toEqual([]);
  });
});

/** Another csi-node started on `node`'s state directory (with a socket and node id of its own). */
function secondCsiNode(node: CsiNodeFixture): StorctlProcess {
  return new StorctlProcess([
    'daemon',
    'csi-node',
    '--endpoint',
    `unix://${join(node.dir, 'second.sock')}`,
    '--node-id',
    'csi-node-2',
    '--root',
    node.root,
    '--state-dir',
    node.stateDir,
  ]);
}
