import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, TestCluster } from './cluster.js';

const MiB = 1 << 20;

/**
 * A volume whose target's io-engine stopped answering (a hung process, a partition) still reads:
 * HA reads it before switching its target away, and an operator reads it to see what is wrong. The
 * request timeout here is an hour, so a read that waited on the io-engine would never answer.
 */
describe('a volume whose target io-engine is stalled', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ engines: 2, coreFlags: coreFlags({ '--request-timeout': '1h' }) });
  }, 90_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('GET /volumes/{id} answers from the last state core saw instead of waiting on the io-engine', async () => {
    const id = newVolumeId();
    await c.createPublished(id, { size: 8 * MiB, replicas: 1, node: 'node-1' });
    const engine = c.engine('node-1');
    process.kill(engine.proc.pid, 'SIGSTOP');
    try {
      const v = await c.rest.getVolume(id);
      expect(v.state.target?.node).toBe('node-1');
    } finally {
      process.kill(engine.proc.pid, 'SIGCONT');
    }
    await c.rest.unpublishVolume(id);
    await c.rest.deleteVolume(id);
  });

  it('moved away from a stalled node, its old target is shut down later by the GC instead of waited on', async () => {
    const id = newVolumeId();
    const first = await c.createPublished(id, { size: 8 * MiB, replicas: 2, node: 'node-1' });
    const oldNexus = first.state.target!.uuid;
    const engine = c.engine('node-1');
    process.kill(engine.proc.pid, 'SIGSTOP');
    try {
      const moved = await c.rest.publishVolume(id, {
        protocol: 'nbd',
        publish_context: {},
        republish: true,
        node: 'node-2',
      });
      expect(moved.state.target?.node).toBe('node-2');
      // HA's last stage: the stale target on the stalled node is left to the GC, the call answers.
      await c.rest.call('DELETE', `/volumes/${id}/shutdown_targets`);
      const nexuses = await c.rest.call<{ uuid: string }[]>('GET', '/nexuses');
      expect(nexuses.map((n) => n.uuid)).toContain(oldNexus);
    } finally {
      process.kill(engine.proc.pid, 'SIGCONT');
    }
    await waitFor(
      async () =>
        !(await c.rest.call<{ uuid: string }[]>('GET', '/nexuses')).some((n) => n.uuid === oldNexus),
      { what: 'the old target destroyed once its node answers' },
    );
    await c.rest.unpublishVolume(id);
    await c.rest.deleteVolume(id);
  });
});
