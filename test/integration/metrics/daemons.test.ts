import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NbdClient } from '../../../src/lib/nbd/client.js';
import { CsiClient, publishRequest } from '../../helpers/csi-client.js';
import { metricsUrl, scrape, sum } from '../../helpers/metrics.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { POOL_CAPACITY, TestCluster } from '../core/cluster.js';
import { createRequest, mountCap, startController } from '../csi-controller/controller-process.js';
import { BUCKET, cleanupRoot, type Env, makeEnv, mounterProcess, targetPath } from '../mounter/fixture.js';

/*
 * Every daemon serves /metrics: each one is scraped over real HTTP before and after real work
 * (REST calls, NBD I/O, a rebuild, CSI calls, an S3 mount), and the series that count that work
 * must have moved by what was done — no more, no less where the work is exact.
 */

const MiB = 1 << 20;

describe('/metrics of every daemon (real processes, real HTTP)', () => {
  let c: TestCluster;
  const procs: StorctlProcess[] = [];
  let env: Env;

  beforeAll(async () => {
    c = await TestCluster.start({ engines: 2 });
    env = await makeEnv('storctl-metrics');
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) await p.kill('SIGTERM');
    await c?.stop();
    if (env) {
      await env.s3.stop();
      await cleanupRoot(env.root);
    }
  });

  it('core and io-engine: REST routes, store transactions, reconcile passes, states, NBD bytes, rebuilds, gRPC', async () => {
    const coreUrl = metricsUrl(c.cores[0])!;
    const engineUrl = metricsUrl(c.engine('node-1').proc)!;
    expect(coreUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(engineUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const core0 = await scrape(coreUrl);
    const engine0 = await scrape(engineUrl);

    const id = crypto.randomUUID();
    const published = await c.createPublished(id, { size: 8 * MiB, replicas: 1, node: 'node-1' });
    await c.rest.getVolume(id);
    await c.rest.getVolume(id).catch(() => {});
    await c.rest.getVolume(crypto.randomUUID()).catch(() => {}); // 404

    // 1 MiB written and 2 MiB read through the nexus target.
    const nbd = await NbdClient.connect(published.state.target!.deviceUri!);
    const buf = Buffer.alloc(MiB, 7);
    await nbd.write(buf, 0, false);
    await nbd.read(Buffer.alloc(MiB), 0);
    await nbd.read(Buffer.alloc(MiB), MiB);
    await nbd.close();
    const nexusId = published.state.target!.uuid;

    // A second replica on node-2 is rebuilt from the first: the whole 8 MiB copied.
    await c.scaleToHealthy(id, 2);

    const core1 = await scrape(coreUrl);
    const route = { method: 'PUT', route: '/volumes/:volume_id' };
    // One create (PUT /volumes/{id}), counted under its route pattern, not its id.
    expect(
      sum(core1, 'storctl_rest_requests_total', { ...route, status: '200' }) -
        sum(core0, 'storctl_rest_requests_total', { ...route, status: '200' }),
    ).toBe(1);
    expect([...core1.keys()].some((k) => k.includes(id))).toBe(false);
    expect(
      sum(core1, 'storctl_rest_requests_total', {
        method: 'GET',
        route: '/volumes/:volume_id',
        status: '404',
      }) -
        sum(core0, 'storctl_rest_requests_total', {
          method: 'GET',
          route: '/volumes/:volume_id',
          status: '404',
        }),
    ).toBe(1);
    expect(sum(core1, 'storctl_rest_request_duration_seconds_count', { method: 'GET' })).toBeGreaterThan(
      sum(core0, 'storctl_rest_request_duration_seconds_count', { method: 'GET' }),
    );
    const txn = { backend: 'embedded', op: 'txn', outcome: 'succeeded' };
    expect(sum(core1, 'storctl_store_txn_duration_seconds_count', txn)).toBeGreaterThan(
      sum(core0, 'storctl_store_txn_duration_seconds_count', txn),
    );
    // Reconcile passes run on their own period: wait for the next one rather than assume it fell
    // between the two scrapes on a loaded machine.
    const passes0 = sum(core0, 'storctl_reconcile_duration_seconds_count', { reconciler: 'pass' });
    await waitFor(
      async () =>
        sum(await scrape(coreUrl), 'storctl_reconcile_duration_seconds_count', { reconciler: 'pass' }) >
        passes0,
      { what: 'a reconcile pass counted' },
    );
    expect(
      sum(core1, 'storctl_reconcile_duration_seconds_count', { reconciler: 'self-heal' }),
    ).toBeGreaterThan(0);
    expect(sum(core1, 'storctl_volumes', { state: 'Online' })).toBe(1);
    expect(sum(core1, 'storctl_replicas', { state: 'online' })).toBe(2);
    expect(sum(core1, 'storctl_nexuses', { state: 'Online' })).toBe(1);
    expect(sum(core1, 'process_cpu_seconds_total')).toBeGreaterThan(0);

    const engine1 = await scrape(engineUrl);
    const target = { target: nexusId };
    expect(sum(engine1, 'storctl_nbd_bytes_total', { ...target, direction: 'write' })).toBe(MiB);
    expect(sum(engine1, 'storctl_nbd_bytes_total', { ...target, direction: 'read' })).toBe(2 * MiB);
    expect(sum(engine1, 'storctl_nbd_requests_total', { ...target, type: 'write' })).toBe(1);
    expect(sum(engine1, 'storctl_nbd_requests_total', { ...target, type: 'read' })).toBe(2);
    expect(sum(engine1, 'storctl_nbd_request_duration_seconds_count', target)).toBeGreaterThanOrEqual(3);
    expect(sum(engine1, 'storctl_nbd_request_duration_seconds_bucket', { ...target, le: '+Inf' })).toBe(
      sum(engine1, 'storctl_nbd_request_duration_seconds_count', target),
    );
    expect(
      sum(engine1, 'storctl_rebuilds_total', { result: 'completed' }) -
        sum(engine0, 'storctl_rebuilds_total', { result: 'completed' }),
    ).toBe(1);
    // The data the rebuild wrote (the MiB written), not the zeroed rest of the 8 MiB volume.
    expect(sum(engine1, 'storctl_rebuild_bytes_total') - sum(engine0, 'storctl_rebuild_bytes_total')).toBe(
      MiB,
    );
    expect(sum(engine1, 'storctl_rebuilds_active')).toBe(0);
    // The pool, under Mayastor's exporter names: empty before, then the 8 MiB thin replica promised
    // and the MiB written to it held.
    const pool = { node: 'node-1', name: 'pool-node-1' };
    expect(sum(engine0, 'disk_pool_total_size_bytes', pool)).toBe(POOL_CAPACITY);
    expect(sum(engine0, 'disk_pool_committed_size_bytes', pool)).toBe(0);
    expect(sum(engine0, 'disk_pool_used_size_bytes', pool)).toBe(0);
    expect(sum(engine1, 'disk_pool_status', pool)).toBe(1);
    expect(sum(engine1, 'disk_pool_committed_size_bytes', pool)).toBe(8 * MiB);
    // Pool usage is read at most a second old: wait for the write to show.
    let used = 0;
    await waitFor(
      async () => {
        used = sum(await scrape(engineUrl), 'disk_pool_used_size_bytes', pool);
        return used >= MiB;
      },
      { what: 'the written MiB in disk_pool_used_size_bytes' },
    );
    expect(used).toBeLessThan(2 * MiB); // thin: what was written, not the 8 MiB
    const createNexus = { service: 'storctl.io_engine.v1.IoEngine', method: 'CreateNexus', code: 'OK' };
    expect(
      sum(engine1, 'storctl_grpc_requests_total', createNexus) -
        sum(engine0, 'storctl_grpc_requests_total', createNexus),
    ).toBe(1);
    // NexusInfo writes (the nexus created, its new child healthy after the rebuild): compare-and-swap
    // transactions, so a record core fenced is never overwritten.
    expect(sum(engine1, 'storctl_store_txn_duration_seconds_count', { op: 'txn' })).toBeGreaterThan(
      sum(engine0, 'storctl_store_txn_duration_seconds_count', { op: 'txn' }),
    );
  });

  it('csi-controller: CSI RPCs by method and code', async () => {
    const { proc, socket } = await startController(join(c.dir, 'ctl'), c.restUrl, c.env);
    procs.push(proc);
    const url = metricsUrl(proc)!;
    const before = await scrape(url);
    const csi = new CsiClient(socket);
    try {
      await csi.controller(
        'CreateVolume',
        createRequest(`pvc-${crypto.randomUUID()}`, { caps: [mountCap()] }),
      );
      await csi.controller('CreateVolume', { name: '', volume_capabilities: [] }).catch(() => {});
    } finally {
      csi.close();
    }
    const after = await scrape(url);
    const rpc = (code: string) => ({ service: 'csi.v1.Controller', method: 'CreateVolume', code });
    expect(
      sum(after, 'storctl_grpc_requests_total', rpc('OK')) -
        sum(before, 'storctl_grpc_requests_total', rpc('OK')),
    ).toBe(1);
    expect(
      sum(after, 'storctl_grpc_requests_total', rpc('INVALID_ARGUMENT')) -
        sum(before, 'storctl_grpc_requests_total', rpc('INVALID_ARGUMENT')),
    ).toBe(1);
    expect(
      sum(after, 'storctl_grpc_request_duration_seconds_count', {
        service: 'csi.v1.Controller',
        method: 'CreateVolume',
      }),
    ).toBe(2);
  });

  it('csi-node: CSI RPCs by method and code', async () => {
    const dir = join(c.dir, 'csi-node');
    mkdirSync(join(dir, 'kubelet'), { recursive: true });
    const socket = join(dir, 'csi.sock');
    const proc = new StorctlProcess(
      [
        'daemon',
        'csi-node',
        '--endpoint',
        `unix://${socket}`,
        '--node-id',
        'metrics-node',
        '--root',
        join(dir, 'kubelet'),
        '--state-dir',
        join(dir, 'state'),
        '--rest',
        c.restUrl,
      ],
      { STORCTL_LOG_LEVEL: 'info' },
    );
    procs.push(proc);
    await waitFor(
      async () => proc.output.includes('"csi-node ready"') || (await proc.failIfExited('csi-node')),
      {
        what: 'csi-node ready',
        timeoutMs: 30_000,
      },
    );
    const url = metricsUrl(proc)!;
    const csi = new CsiClient(socket);
    try {
      await csi.node('NodeGetInfo', {});
      await csi.node('NodeGetInfo', {});
      await csi.node('NodeStageVolume', { volume_id: '' }).catch(() => {});
    } finally {
      csi.close();
    }
    const after = await scrape(url);
    expect(
      sum(after, 'storctl_grpc_requests_total', {
        service: 'csi.v1.Node',
        method: 'NodeGetInfo',
        code: 'OK',
      }),
    ).toBe(2);
    expect(
      sum(after, 'storctl_grpc_requests_total', {
        service: 'csi.v1.Node',
        method: 'NodeStageVolume',
        code: 'INVALID_ARGUMENT',
      }),
    ).toBe(1);
  });

  it('mounter: mount operations and failures', async () => {
    const proc = mounterProcess(env, ['--mounter', 'process', '--mount-timeout', '15s']);
    procs.push(proc);
    await waitFor(
      async () => proc.output.includes('mounter listening') || (await proc.failIfExited('mounter')),
      {
        what: 'mounter listening',
      },
    );
    const url = metricsUrl(proc)!;
    const csi = new CsiClient(env.socket);
    const target = targetPath(env, 'pod-m', 'pv-m');
    try {
      await csi.node('NodePublishVolume', publishRequest({ volumeId: 'pv-m', target, bucket: BUCKET }));
      // A bucket that does not exist: s3fs refuses it, the publish fails.
      await csi
        .node(
          'NodePublishVolume',
          publishRequest({
            volumeId: 'pv-x',
            target: targetPath(env, 'pod-x', 'pv-x'),
            bucket: 'no-such-bucket',
          }),
        )
        .catch(() => {});
      await csi.node('NodeUnpublishVolume', { volume_id: 'pv-m', target_path: target });
    } finally {
      csi.close();
    }
    const after = await scrape(url);
    const op = (operation: string, result: string) => ({ operation, result });
    expect(sum(after, 'storctl_mount_operations_total', op('publish', 'ok'))).toBe(1);
    expect(sum(after, 'storctl_mount_operations_total', op('publish', 'failed'))).toBe(1);
    expect(sum(after, 'storctl_mount_operations_total', op('unpublish', 'ok'))).toBe(1);
    expect(
      sum(after, 'storctl_grpc_requests_total', { service: 'csi.v1.Node', method: 'NodePublishVolume' }),
    ).toBe(2);
  }, 60_000);

  it('--metrics-address off serves nothing; a taken address fails the start with exit 4', async () => {
    const off = new StorctlProcess([
      'daemon',
      'csi-controller',
      '--endpoint',
      `unix://${join(c.dir, 'off.sock')}`,
      '--rest',
      c.restUrl,
      '--metrics-address',
      'off',
    ]);
    procs.push(off);
    await waitFor(async () => off.output.includes('csi-controller listening') || (await off.failIfExited()), {
      what: 'csi-controller listening',
    });
    expect(metricsUrl(off)).toBeNull();
    const taken = new URL(metricsUrl(c.cores[0])!).host;
    const clash = new StorctlProcess([
      'daemon',
      'csi-controller',
      '--endpoint',
      `unix://${join(c.dir, 'clash.sock')}`,
      '--rest',
      c.restUrl,
      '--metrics-address',
      taken,
    ]);
    expect(await clash.wait()).toBe(4);
    expect(clash.output).toContain('address already in use');
    const bad = new StorctlProcess([
      'daemon',
      'csi-controller',
      '--endpoint',
      'unix:///tmp/x.sock',
      '--metrics-address',
      'nowhere',
    ]);
    expect(await bad.wait()).toBe(2);
  });
});
