import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestClient } from '../../../src/lib/rest/client.js';
import type { StorctlProcess } from '../../helpers/storctl.js';
import { UpHome } from '../core/up-fixture.js';
import { DashboardPty } from './pty.js';

/**
 * `storctl dashboard` against a running `storctl up` cluster: it finds core through the endpoints
 * `up` published for the store, and shows core's live state (target URI, pool capacity) beside the
 * store's; a volume created while it runs appears.
 */
describe('storctl dashboard against a running cluster (built CLI, pseudo-terminal)', () => {
  const cluster = new UpHome();
  let up: StorctlProcess;

  beforeAll(async () => {
    up = await cluster.start();
  }, 90_000);
  afterAll(async () => {
    await up?.kill('SIGINT');
    rmSync(cluster.home, { recursive: true, force: true });
  });

  it('shows core live: the published target URI, pool capacity; a new volume appears', async () => {
    const rest = new RestClient(cluster.endpoints().rest);
    const pty = new DashboardPty([], cluster.env, { cols: 140, rows: 30 });
    try {
      const id = crypto.randomUUID();
      await rest.createVolume(id, { size: 16 << 20, replicas: 2, thin: true, policy: { self_heal: true } });
      const uri = (await rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' }))
        .state.target!.deviceUri;
      await pty.waitForText(id);
      await pty.waitForText('core live');
      // The target URI in the volume's row comes from core's REST (the store does not hold it).
      const escaped = uri.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
      await pty.waitForMatch(new RegExp(`${id} +Online +\\S+ +2/2 +node-1 +${escaped}`));
      pty.child.stdin?.write('2'); // pools
      await pty.waitForText('/ 1GiB'); // capacity, from core
      expect(await pty.quit()).toBe(0);
    } finally {
      pty.kill();
      await rest.close();
    }
  });
});
