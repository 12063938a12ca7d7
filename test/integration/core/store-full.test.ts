import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreFullError } from '../../../src/lib/errors.js';
import { RestError } from '../../../src/lib/rest/errors.js';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';
import { TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

/** etcd raises NOSPACE once its database reaches this (etcd's default is 2 GiB). */
const QUOTA = 8 << 20;
const NEIGHBOUR = '/neighbour-app/';

const volumeBody = { size: 4 << 20, replicas: 1, thin: true, policy: { self_heal: true } };

/**
 * etcd out of space (its NOSPACE alarm, raised here by another application's keys filling a small
 * quota): every write is refused. Core answers that the store is full and nothing was written (not
 * "unreachable", not "may or may not have been applied"), changes nothing, `doctor store` names the
 * alarm and the etcdctl steps that clear it, a core started meanwhile exits saying the store is full,
 * and once the space is freed and the alarm disarmed everything works again.
 */
describe('core on an etcd out of space (NOSPACE alarm)', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.start({ backend: 'etcd', etcdQuotaBytes: QUOTA, engines: 2 });
  }, 120_000);
  afterAll(() => c?.stop());

  const etcdctl = (...args: string[]) =>
    execFileSync('etcdctl', [`--endpoints=${c.etcd!.clientUrl}`, ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
    }).toString();

  it('refuses writes saying the store is full, changes nothing, and resumes once space is freed', async () => {
    const before = crypto.randomUUID();
    await c.rest.createVolume(before, volumeBody);
    // A published volume with a child on each node: the one on node-2 will fault while etcd is full.
    const published = crypto.randomUUID();
    const uri = (await c.createPublished(published, { size: 4 << 20, replicas: 2, node: 'node-1' })).state
      .target!.deviceUri!;
    await qemuIo(uri, 'write -P 0x3c 0 1M');

    // Another application sharing the etcd fills it.
    const store = await openStore(c.storeUrl);
    let full: unknown;
    try {
      const value = 'x'.repeat(256 << 10);
      for (let i = 0; i < 8 * (QUOTA / (256 << 10)) && !full; i++)
        await store.put(`${NEIGHBOUR}${i}`, value).catch((err) => {
          full = err;
        });
    } finally {
      await store.close();
    }
    expect(full).toBeInstanceOf(StoreFullError);
    const err = full as StoreFullError;
    expect(err.message).toMatch(
      /^store etcd:\/\/\S+ is full: etcd's space quota is exhausted \(alarm NOSPACE\): it refuses every write; nothing was written$/,
    );
    expect(err.suggestions.join('\n')).toMatch(/compact REVISION.*defrag --cluster.*alarm disarm/);

    // Core: a definite refusal (nothing applied), not an unanswered write.
    const refused = crypto.randomUUID();
    const answer = await c.rest.createVolume(refused, volumeBody).catch((e: unknown) => e);
    expect(answer).toBeInstanceOf(RestError);
    expect((answer as RestError).kind).toBe('FailedPersist');
    expect((answer as RestError).details).toBe('StoreFull');
    expect((answer as RestError).message).toContain('store write refused: store etcd://');
    expect((answer as RestError).message).toContain('alarm NOSPACE');

    const cli = await runStorctl(['volume', 'create', '--size', '4Mi', '--replicas', '1'], { env: c.env });
    expect(cli.code).toBe(5);
    expect(cli.stderr).toContain('is full');
    expect(cli.stderr).toContain(
      'nothing was changed: free space in the store as `storctl doctor store` says',
    );
    expect(cli.stderr).not.toContain('may or may not');
    expect((await c.rest.listVolumes()).map((v) => v.spec.uuid).sort()).toEqual([before, published].sort());

    // A child faults: its nexus cannot record that, shuts itself down, and says why.
    await c.engine('node-2').proc.kill('SIGKILL');
    // Not acknowledged: the nexus could not record which child holds it.
    await expect(qemuIo(uri, 'write -P 0x3d 0 64k')).rejects.toThrow();
    const shut = await c.volumeWhere(published, (v) => v.state.target?.state === 'Shutdown', {
      what: 'the target shut down',
    });
    expect(shut.state.target?.shutdown_reason).toMatch(
      /^NexusInfo could not be persisted: cannot persist NexusInfo \S+: store etcd:\/\/\S+ is full: /,
    );
    const described = await runStorctl(['describe', 'volume', published], { env: c.env });
    expect(described.stdout).toMatch(/^ {2}Shut down: +NexusInfo could not be persisted: .* is full: /m);

    // doctor store names the alarm, and the steps with the revision to compact to.
    const doctor = await runStorctl(['doctor', 'store'], { env: c.env });
    expect(doctor.code).toBe(11);
    expect(doctor.stdout).toMatch(/^error {3}store-alarm {2}member\/[0-9a-f]+$/m);
    expect(doctor.stdout).toContain(
      "etcd's space quota (--quota-backend-bytes) is exhausted (alarm NOSPACE)",
    );
    const revision = /at revision (\d+)\./.exec(doctor.stdout)?.[1];
    expect(doctor.stdout).toContain(
      `etcdctl --endpoints=${c.etcd!.clientUrl.replace('http://', '')} compact ${revision}`,
    );

    // A core started meanwhile cannot take its lease (etcd refuses to grant one): it exits saying so.
    await c.cores[0].kill('SIGTERM');
    const starting = await c.startCore(undefined, false);
    expect(await starting.wait()).toBe(5);
    expect(starting.output).toContain('is full');
    expect(starting.output).toContain('alarm NOSPACE');

    // The operator frees space and disarms the alarm: writes work again, no restart of etcd needed.
    etcdctl('del', '--prefix', NEIGHBOUR);
    etcdctl(
      'compact',
      String(JSON.parse(etcdctl('endpoint', 'status', '-w', 'json'))[0].Status.header.revision),
    );
    etcdctl('defrag');
    etcdctl('alarm', 'disarm');
    await c.waitCoreReady(await c.startCore(undefined, false));
    await c.rest.createVolume(refused, volumeBody);
    expect((await c.rest.listVolumes()).map((v) => v.spec.uuid).sort()).toEqual(
      [before, published, refused].sort(),
    );
    // Published again (as HA does for a staged volume), it serves from the replica that was healthy.
    const back = await c.rest.publishVolume(published, {
      protocol: 'nbd',
      publish_context: {},
      node: 'node-1',
      republish: true,
    });
    await qemuIo(back.state.target!.deviceUri!, 'read -P 0x3c 64k 960k');
    expect((await runStorctl(['doctor', 'store'], { env: c.env })).code).toBe(0);
  }, 120_000);
});
