import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStorctl } from '../../helpers/storctl.js';
import { newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

/**
 * Exit codes the README promises that need a running core: 7 (timed out) from a drain that cannot
 * finish, and 6 (daemon unreachable) from `get block-devices`, the one `get` that asks core's REST
 * API instead of the store; the other `get` commands keep working with core down.
 */
describe('storctl exit codes with one io-engine: drain timing out, core down', () => {
  let cluster: TestCluster;
  const volume = newVolumeId();

  beforeAll(async () => {
    cluster = await TestCluster.start({ backend: 'embedded', engines: 1 });
    await cluster.createPublished(volume, { size: 16 * MiB, replicas: 1, node: 'node-1' });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('node drain --wait on the only node: the target has nowhere to go, exit 7 after --timeout', async () => {
    const r = await runStorctl(['node', 'drain', 'node-1', '--wait', '--timeout', '1'], { env: cluster.env });
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('draining node-1: 1 volume target(s) left to move');
    expect(r.stderr).toContain('Error: node node-1 not drained after 1s (1 target(s) left)');
    expect(r.stderr).toContain('Try: see why with `storctl events`');
    expect(r.code).toBe(7);
    // The target did not move: there is no other node.
    expect((await cluster.rest.getVolume(volume)).spec.target?.node).toBe('node-1');
  });

  it('get block-devices asks core: exit 0 while core runs, exit 6 naming core and what to start once it stops', async () => {
    const up = await runStorctl(['get', 'block-devices', 'node-1', '--all', '-o', 'json'], {
      env: cluster.env,
    });
    expect(up.code).toBe(0);
    expect(Array.isArray(JSON.parse(up.stdout))).toBe(true);

    for (const core of cluster.cores) await core.kill('SIGTERM');
    const down = await runStorctl(['get', 'block-devices', 'node-1'], { env: cluster.env });
    expect(down.stdout).toBe('');
    expect(down.stderr).toContain(`Error: core REST API at ${cluster.restUrl} is unreachable`);
    expect(down.stderr).toContain('Try: start a cluster with `storctl up`');
    expect(down.code).toBe(6);

    // Every other get reads the store: still answers with core down.
    const volumes = await runStorctl(['get', 'volumes', '-o', 'json'], { env: cluster.env });
    expect(volumes.code).toBe(0);
    expect((JSON.parse(volumes.stdout) as { spec: { uuid: string } }[]).map((v) => v.spec.uuid)).toEqual([
      volume,
    ]);
    const nodes = await runStorctl(['get', 'nodes'], { env: cluster.env });
    expect(nodes.code).toBe(0);
    // Straight from the store (the io-engine's liveness key): online, though core is down.
    expect(nodes.stdout).toMatch(/^\s*node-1\s+\S+\s+Online\b/m);
  });
});
