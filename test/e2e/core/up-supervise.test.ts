import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestClient } from '../../../src/lib/rest/client.js';
import { CsiClient } from '../../helpers/csi-client.js';
import type { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { qemuIo } from '../../integration/core/qemu.js';
import { UpHome } from './up-fixture.js';

/**
 * `storctl up` keeps its roles running: a core killed with SIGKILL is started again (the io-engines
 * and their targets serve on meanwhile), and so is a killed io-engine, on the ports it had, so the
 * volume's target comes back at its URI. The store lease of the killed core is released at once, so
 * the new core does not wait out its TTL.
 */
describe('storctl up restarts a role that dies (built CLI)', () => {
  const cluster = new UpHome();
  let up: StorctlProcess;
  const endpoints = () => cluster.endpoints();

  beforeAll(async () => {
    // A lease TTL far beyond the waits below: a restarted core must not wait out the dead one's.
    up = await cluster.start(['--lease-ttl', '600']);
  }, 90_000);
  afterAll(async () => {
    await up?.kill('SIGINT');
    rmSync(cluster.home, { recursive: true, force: true });
  });

  it('core and an io-engine killed with SIGKILL come back; the volume is Online again (rebuilt) at its URI with its data', async () => {
    const restUrl = endpoints().rest;
    let rest = new RestClient(restUrl);
    const id = crypto.randomUUID();
    await rest.createVolume(id, { size: 16 << 20, replicas: 2, thin: true, policy: { self_heal: true } });
    const uri = (await rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' })).state
      .target!.deviceUri;
    await qemuIo(uri, 'write -P 0x5a 0 1M');
    await rest.close();
    const before = endpoints().roles as Record<string, number>;

    process.kill(before.core, 'SIGKILL');
    // The target lives on the io-engine: I/O goes on while core is down.
    await qemuIo(uri, 'read -P 0x5a 0 1M');
    await waitFor(() => endpoints().roles.core !== before.core && up.output.includes('core restarted'), {
      what: 'core restarted',
      timeoutMs: 30_000,
    });
    expect(up.output).toMatch(/core exited \(code null\); restarting in 1s/);
    expect(up.output).toMatch(/core: released the store lease [0-9a-f]+ of the core that exited/);
    expect(up.output).not.toContain('waiting for the store lease');
    // Back at its URL (REST asked for port 0): the csi-controller and ha-cluster, started with that
    // URL, reach it still. Before, it came back on a new port, and both failed until up restarted.
    expect(endpoints().rest).toBe(restUrl);
    await expectControllerReady();
    rest = new RestClient(endpoints().rest);
    try {
      expect((await rest.getVolume(id)).state.status).toBe('Online');
      expect(endpoints().roles['io-engine node-1']).toBe(before['io-engine node-1']);

      process.kill(before['io-engine node-1'], 'SIGKILL');
      await waitFor(
        async () => {
          const v = await rest.getVolume(id).catch(() => null);
          // Until core notices the new process it may still report the old target: the read is
          // what counts.
          return (
            endpoints().roles['io-engine node-1'] !== before['io-engine node-1'] &&
            v?.state.status === 'Online' &&
            v.state.target?.deviceUri === uri &&
            (await qemuIo(uri, 'read -P 0x5a 0 1M').then(
              () => true,
              () => false,
            ))
          );
        },
        { what: 'io-engine node-1 restarted, the target back at its URI with the data', timeoutMs: 60_000 },
      );
    } finally {
      await rest.close();
    }
    expect(up.running).toBe(true);
  }, 150_000);

  it('core restarted where its port was taken meanwhile: the roles that call it (csi-controller, csi-node, ha-cluster) start again with its new URL', async () => {
    const restUrl = endpoints().rest;
    const port = Number(new URL(restUrl).port);
    const before = endpoints().roles as Record<string, number>;
    process.kill(before.core, 'SIGKILL');
    // Someone else takes core's port in the second before up starts it again (as soon as the dead
    // process's socket is gone).
    const squatter = createServer();
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          squatter.once('error', () => resolve(false));
          squatter.listen(port, '127.0.0.1', () => resolve(true));
        }),
      { what: "core's port free to take" },
    );
    try {
      await waitFor(
        () =>
          endpoints().rest !== restUrl &&
          endpoints().roles['csi-controller'] !== before['csi-controller'] &&
          endpoints().roles['csi-node'] !== before['csi-node'] &&
          endpoints().roles['ha-cluster'] !== before['ha-cluster'],
        { what: 'core elsewhere, csi-controller and ha-cluster started again', timeoutMs: 60_000 },
      );
      const now = endpoints().rest;
      expect(up.output).toContain(`core now serves at ${now}, not ${restUrl}: restarting csi-controller`);
      expect(up.output).toContain(`core now serves at ${now}, not ${restUrl}: restarting csi-node`);
      expect(up.output).toContain(`core now serves at ${now}, not ${restUrl}: restarting ha-cluster`);
      await expectControllerReady();
    } finally {
      squatter.close();
    }
    expect(up.running).toBe(true);
  }, 120_000);

  /** The csi-controller's Probe answers ready: core answers it. */
  async function expectControllerReady(): Promise<void> {
    await waitFor(
      async () => {
        const csi = new CsiClient(endpoints().csiControllerSocket);
        try {
          const probe = await csi.identity<{ ready?: { value: boolean } }>('Probe').catch(() => null);
          return probe?.ready?.value === true;
        } finally {
          csi.close();
        }
      },
      { what: 'the csi-controller ready (core answers it)', timeoutMs: 30_000 },
    );
  }
});
