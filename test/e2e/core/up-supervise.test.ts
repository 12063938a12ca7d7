import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RestClient } from '../../../src/lib/rest/client.js';
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
    let rest = new RestClient(endpoints().rest);
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
});
