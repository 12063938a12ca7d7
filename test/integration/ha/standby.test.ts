import { randomUUID } from 'node:crypto';
import type { ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HaClusterClient } from '../../../src/lib/ha/clients.js';
import { runStorctl, type StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { TestCluster } from '../core/cluster.js';
import { haClusterProcess, listeningOn, startHaCluster } from './fixture.js';

/** One active ha-cluster (store election), a standby that takes over, and a switchover that ends Errored. */
describe('ha-cluster: standby takeover and an Errored switchover (embedded store)', () => {
  let cluster: TestCluster;
  const procs: StorctlProcess[] = [];

  beforeAll(async () => {
    cluster = await TestCluster.start({ engines: 1, pools: false });
  }, 60_000);

  afterAll(async () => {
    for (const p of procs) await p.kill('SIGTERM');
    await cluster?.stop();
  }, 60_000);

  it('a standby refuses until the active one is killed -9, then takes over within the lease TTL', {
    timeout: 60_000,
  }, async () => {
    const active = await startHaCluster(cluster);
    procs.push(active.proc);
    const standby = haClusterProcess(cluster, { retryDelay: '100ms', extra: ['--max-retries', '2'] });
    procs.push(standby);
    const endpoint = await listeningOn(standby, 'ha-cluster');
    const client = new HaClusterClient(endpoint);
    try {
      const refused = await client.register('n1', '127.0.0.1:1').catch((e: ServiceError) => e);
      expect((refused as ServiceError).code).toBe(14); // UNAVAILABLE
      expect((refused as ServiceError).details).toContain('standby');
      await active.proc.kill('SIGKILL');
      await waitFor(
        async () =>
          standby.output.includes('"ha-cluster active"') || (await standby.failIfExited('ha-cluster')),
        {
          what: 'the standby to take over',
          timeoutMs: 20_000,
        },
      );
      await client.register('n1', '127.0.0.1:1');

      // A switchover that cannot succeed (the volume does not exist) ends Errored with the reason,
      // shown by get switchovers; an operator clears it with --cancel.
      const volume = randomUUID();
      const { statuses } = await client.report('n1', '127.0.0.1:1', [
        { volume_id: volume, target_uri: 'nbd://127.0.0.1:1/x', reason: 'test' },
      ]);
      expect(statuses).toEqual([]);
      const env = { env: cluster.env };
      const listed = await waitFor(
        async () => {
          const r = await runStorctl(['get', 'switchovers', '-o', 'json'], env);
          const rows = JSON.parse(r.stdout) as { volume: string; operation: { operation: unknown } }[];
          const row = rows.find((x) => x.volume === volume);
          return row && typeof row.operation.operation === 'object' ? row : null;
        },
        { what: 'the switchover to end Errored' },
      );
      expect(JSON.stringify(listed.operation.operation)).toContain('not found');
      const table = await runStorctl(['get', 'switchovers'], env);
      expect(table.stdout).toMatch(/VOLUME\s+STAGE\s+RETRIES\s+AGE\s+FROM\s+TO\s+REASON/);
      expect(table.stdout).toContain('Errored');
      const bad = await runStorctl(['switchover', '--volume', 'bad', '--force'], env);
      expect(bad.code).toBe(2);
      const cancel = await runStorctl(
        ['switchover', '--volume', volume, '--cancel', '--ha-cluster', endpoint, '-o', 'yaml'],
        env,
      );
      expect(cancel.code).toBe(0);
      expect(cancel.stdout).toContain('cancelled: true');
      expect(cancel.stdout).toContain('stage: Errored');
      const again = await runStorctl(
        ['switchover', '--volume', volume, '--cancel', '--ha-cluster', endpoint],
        env,
      );
      expect(again.code).toBe(3);
      const unreachable = await runStorctl(
        ['switchover', '--volume', volume, '--ha-cluster', '127.0.0.1:1'],
        env,
      );
      expect(unreachable.code).toBe(6);
      expect(unreachable.stderr).toContain(
        'ha-cluster at 127.0.0.1:1 cannot take the request: connect ECONNREFUSED',
      );
      const after = JSON.parse(
        (await runStorctl(['get', 'switchovers', '-o', 'json'], env)).stdout,
      ) as unknown[];
      expect(after).toEqual([]);
    } finally {
      client.close();
    }
  });
});
