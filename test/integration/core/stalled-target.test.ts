import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
