import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { newVolumeId, TestCluster } from './cluster.js';
import { call, OUTAGE_CORE_FLAGS } from './store-outage.js';

const MiB = 1 << 20;

/**
 * A TCP proxy in front of etcd that, while `mute` is on, passes core's requests to etcd but holds
 * back etcd's answers: a write is applied while core hears nothing and gives up on it, as when the
 * network drops answers or etcd stalls right after applying.
 */
async function mutingProxy(target: URL) {
  let mute = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      if (!mute) client.write(d);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `etcd://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Hold back answers; ending the mute also drops the connections whose answers were lost. */
    set muted(on: boolean) {
      mute = on;
      if (!on) for (const s of sockets) s.destroy();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * A create whose intent write landed in etcd though core never heard so (answered 507, "may or may
 * not have been applied"): the running core rolls it back once the store answers, as a restart
 * would, instead of leaving the volume Creating in the store, unknown to it, until it restarts.
 */
describe('core: a store write whose outcome is unknown (etcd)', () => {
  let cluster: TestCluster | undefined;
  let proxy: Awaited<ReturnType<typeof mutingProxy>> | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    await cluster?.stop();
    await proxy?.close();
    cluster = undefined;
    proxy = undefined;
    store = undefined;
  });

  it('a create whose intent landed unheard is rolled back by the running core; the same create then succeeds', {
    timeout: 120_000,
  }, async () => {
    cluster = await TestCluster.start({ backend: 'etcd', engines: 1, coreFlags: OUTAGE_CORE_FLAGS });
    const c = cluster;
    // Core again, now talking to etcd through the proxy.
    await c.cores[0].kill('SIGTERM');
    proxy = await mutingProxy(new URL(c.storeUrl.replace(/^etcd:/, 'http:')));
    const core = new StorctlProcess(['daemon', 'core', '--rest', '127.0.0.1:0', ...OUTAGE_CORE_FLAGS], {
      ...c.env,
      STORCTL_STORE: proxy.url,
    });
    c.cores.push(core);
    await c.waitCoreReady(core);
    store = await openStore(c.storeUrl);
    const id = newVolumeId();
    const volumeKey = objectKey({ clusterId: c.clusterId, namespace: 'default' }, 'VolumeSpec', id);
    const body = { size: 8 * MiB, replicas: 1, thin: true, policy: { self_heal: false } };

    proxy.muted = true;
    const first = await call(c.restUrl, 'PUT', `/volumes/${id}`, body);
    expect({ status: first.status, kind: first.body.kind }).toEqual({ status: 507, kind: 'FailedPersist' });
    // The intent is in the store all the same, Creating.
    const landed = JSON.parse((await store.get(volumeKey))!.value);
    expect(landed.status).toBe('Creating');
    proxy.muted = false;

    // The running core settles it: rolled back (its result is unknown), then collected.
    await waitFor(async () => (await store!.get(volumeKey)) === null, {
      what: 'the landed intent rolled back and collected',
      timeoutMs: 60_000,
    });
    const { kvs } = await store.range(
      objectKey({ clusterId: c.clusterId, namespace: 'default' }, 'ReplicaSpec', ''),
    );
    expect(kvs.map((kv) => JSON.parse(kv.value).owners?.volume)).not.toContain(id);
    // A retry of the same create now makes the volume.
    const again = await waitFor(
      async () => {
        const r = await call(c.restUrl, 'PUT', `/volumes/${id}`, body);
        return r.status === 200 ? r : null;
      },
      { what: 'the create retried' },
    );
    expect(again.body.state.status).toBe('Online');
  });
});
