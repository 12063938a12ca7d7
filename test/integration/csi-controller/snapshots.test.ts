import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProto, lookupService } from '../../../src/lib/grpc/proto.js';
import { waitFor } from '../../helpers/wait.js';
import {
  blockCap,
  type CsiSnapshot,
  type CsiVolume,
  controllerFixture,
  createRequest,
  DEFAULT_SIZE,
  MiB,
  mountCap,
  refused,
} from './fixture.js';

const fx = controllerFixture('storctl-csi-snap');

const create = (req: unknown) => fx.csi.controller<{ volume: CsiVolume }>('CreateVolume', req);
const snap = (source: string, name: string, parameters: Record<string, string> = {}) =>
  fx.csi.controller<{ snapshot: CsiSnapshot }>('CreateSnapshot', {
    source_volume_id: source,
    name,
    parameters,
  });
const list = (req: Record<string, unknown>) =>
  fx.csi.controller<{ entries: { snapshot: CsiSnapshot }[]; next_token: string }>('ListSnapshots', req);
const publish = (volume: string, node: string) =>
  fx.csi.controller<{ publish_context: { uri: string } }>('ControllerPublishVolume', {
    volume_id: volume,
    node_id: node,
    volume_capability: mountCap(),
    readonly: false,
  });

/**
 * A tiny real gRPC server implementing proto/csi-node-fs.proto, standing in for the csi-node's
 * freeze service: it records each call with whether the snapshot existed at that moment.
 */
class FreezeServer {
  readonly server = new grpc.Server();
  endpoint = '';
  calls: { rpc: string; volume: string; timeoutMs?: number; snapshots: number }[] = [];
  answer: 'ok' | 'not-found' | 'fail' = 'ok';
  /** While set, Freeze waits for it (an operation held in flight). */
  hold: Promise<void> | null = null;

  async start(): Promise<void> {
    const svc = lookupService(loadProto('csi-node-fs.proto'), 'storctl.csinode.v1.NodeFs');
    const snapshotsOf = async (volume: string) =>
      (await fx.cluster.rest.listSnapshotsPage({ volumeId: volume, maxEntries: 0 })).entries.length;
    this.server.addService(svc.service, {
      Freeze: (
        call: grpc.ServerUnaryCall<{ volume_id: string; timeout_ms: number }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        const { volume_id, timeout_ms } = call.request;
        void (async () => {
          this.calls.push({
            rpc: 'Freeze',
            volume: volume_id,
            timeoutMs: timeout_ms,
            snapshots: await snapshotsOf(volume_id),
          });
          await this.hold;
          if (this.answer === 'not-found') cb({ code: grpc.status.NOT_FOUND, details: 'not staged here' });
          else if (this.answer === 'fail')
            cb({ code: grpc.status.INTERNAL, details: 'fsfreeze: device busy' });
          else cb(null, {});
        })();
      },
      Unfreeze: (
        call: grpc.ServerUnaryCall<{ volume_id: string }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        void snapshotsOf(call.request.volume_id).then((n) => {
          this.calls.push({ rpc: 'Unfreeze', volume: call.request.volume_id, snapshots: n });
          cb(null, { was_frozen: true });
        });
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    this.endpoint = `127.0.0.1:${port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }
}

describe('CreateSnapshot, ListSnapshots, DeleteSnapshot, clones', () => {
  it('a snapshot an attempt left Creating (its io-engine stalled) is taken again by the next CreateSnapshot of its name', {
    timeout: 90_000,
  }, async () => {
    const volume = (await create(createRequest(`pvc-${randomUUID()}`))).volume.volume_id;
    const node = Object.values((await fx.cluster.rest.getVolume(volume)).state.replica_topology)[0].node!;
    const engine = fx.cluster.engine(node).proc.child;
    const name = `snapshot-${randomUUID()}`;
    engine.kill('SIGSTOP');
    try {
      // Core gives up on the io-engine after its request timeout; the record stays Creating.
      await expect(snap(volume, name)).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    } finally {
      engine.kill('SIGCONT');
    }
    const id = name.slice('snapshot-'.length);
    expect((await fx.cluster.rest.getSnapshot(id)).definition.metadata.status).toBe('Creating');
    // The CO asks again, as it does until ready_to_use: this time the snapshot is taken. The stall
    // may have outlasted the node's liveness, and until core sees the replica online again the
    // answer is FAILED_PRECONDITION (no online replica holds the latest data), which it retries.
    const { snapshot } = await waitFor(
      () =>
        snap(volume, name).catch((err: grpc.ServiceError) => {
          if (err.code === grpc.status.FAILED_PRECONDITION) return null;
          throw err;
        }),
      { what: 'CreateSnapshot taken again', timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(snapshot).toMatchObject({ snapshot_id: id, source_volume_id: volume, ready_to_use: true });
    await fx.csi.controller('DeleteSnapshot', { snapshot_id: id });
    await fx.csi.controller('DeleteVolume', { volume_id: volume });
  });

  it('snapshot-<uuid> keeps its uuid; repeats are idempotent; the same name on another volume is ALREADY_EXISTS', async () => {
    const a = (await create(createRequest(`pvc-${randomUUID()}`, { parameters: { repl: '2' } }))).volume
      .volume_id;
    const b = (await create(createRequest(`pvc-${randomUUID()}`))).volume.volume_id;
    const uuid = randomUUID();
    const t0 = Math.floor(Date.now() / 1000) - 1;
    const { snapshot } = await snap(a, `snapshot-${uuid}`);
    expect(snapshot).toMatchObject({
      snapshot_id: uuid,
      source_volume_id: a,
      size_bytes: String(DEFAULT_SIZE),
      ready_to_use: true,
    });
    expect(Number(snapshot.creation_time.seconds)).toBeGreaterThanOrEqual(t0);
    expect((await snap(a, `snapshot-${uuid}`)).snapshot).toEqual(snapshot);
    await refused(
      snap(b, `snapshot-${uuid}`),
      grpc.status.ALREADY_EXISTS,
      new RegExp(`already exists for volume '${a}'`),
    );
    const generic = await snap(a, 'nightly backup');
    expect(generic.snapshot.snapshot_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5/);
    expect((await snap(a, 'nightly backup')).snapshot.snapshot_id).toBe(generic.snapshot.snapshot_id);
    await refused(snap(randomUUID(), 'x'), grpc.status.NOT_FOUND, /source volume/);
    await refused(snap('no-uuid', 'x'), grpc.status.NOT_FOUND);
    await refused(snap(a, 'x', { repl: '2' }), grpc.status.INVALID_ARGUMENT, /unknown parameter 'repl'/);
    await refused(snap(a, 'x', { quiesceFs: 'maybe' }), grpc.status.INVALID_ARGUMENT, /quiesceFs/);
    // maxSnapshots is a quota: one over it is RESOURCE_EXHAUSTED.
    const capped = (await create(createRequest(`pvc-${randomUUID()}`, { parameters: { maxSnapshots: '1' } })))
      .volume.volume_id;
    const only = (await snap(capped, `snapshot-${randomUUID()}`)).snapshot;
    await refused(
      snap(capped, `snapshot-${randomUUID()}`),
      grpc.status.RESOURCE_EXHAUSTED,
      /maximum of 1 snapshots/,
    );
    await fx.csi.controller('DeleteSnapshot', { snapshot_id: only.snapshot_id });
    await fx.csi.controller('DeleteVolume', { volume_id: capped });

    // Listing: by id, by source volume, paginated; unknown ids list nothing; bad tokens are ABORTED.
    const c1 = (await snap(b, `snapshot-${randomUUID()}`)).snapshot;
    expect((await list({ snapshot_id: uuid })).entries.map((e) => e.snapshot)).toEqual([snapshot]);
    expect((await list({ snapshot_id: uuid, source_volume_id: b })).entries).toEqual([]);
    expect((await list({ snapshot_id: randomUUID() })).entries).toEqual([]);
    expect((await list({ snapshot_id: 'not-a-uuid' })).entries).toEqual([]);
    expect((await list({ source_volume_id: randomUUID() })).entries).toEqual([]);
    expect((await list({ source_volume_id: a })).entries.map((e) => e.snapshot.snapshot_id).sort()).toEqual(
      [uuid, generic.snapshot.snapshot_id].sort(),
    );
    expect((await list({ source_volume_id: b })).entries.map((e) => e.snapshot)).toEqual([c1]);
    const seen: string[] = [];
    let token = '';
    do {
      const page = await list({ max_entries: 1, starting_token: token });
      expect(page.entries).toHaveLength(1);
      seen.push(page.entries[0].snapshot.snapshot_id);
      token = page.next_token;
    } while (token);
    expect(seen.sort()).toEqual([uuid, generic.snapshot.snapshot_id, c1.snapshot_id].sort());
    await refused(list({ max_entries: 1, starting_token: 'zzz' }), grpc.status.ABORTED);
    await refused(list({ max_entries: 1, starting_token: '50' }), grpc.status.ABORTED);

    // Clone from a snapshot: the snapshot's size; another size is OUT_OF_RANGE; a volume source INVALID_ARGUMENT.
    const source = { snapshot: { snapshot_id: uuid } };
    const cloneReq = createRequest(`pvc-${randomUUID()}`, { source, parameters: { repl: '2' } });
    const clone = (await create(cloneReq)).volume;
    expect(clone).toMatchObject({ capacity_bytes: String(DEFAULT_SIZE), content_source: source });
    const cv = await fx.cluster.rest.getVolume(clone.volume_id);
    expect(cv.spec).toMatchObject({ num_replicas: 2, thin: true, status: 'Created' });
    expect((await create(cloneReq)).volume).toEqual(clone);
    await refused(
      create({ ...cloneReq, volume_content_source: { snapshot: { snapshot_id: c1.snapshot_id } } }),
      grpc.status.ALREADY_EXISTS,
    );
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { source, required: 2 * DEFAULT_SIZE })),
      grpc.status.OUT_OF_RANGE,
      /snapshot's size/,
    );
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { source: { snapshot: { snapshot_id: randomUUID() } } })),
      grpc.status.NOT_FOUND,
      /source snapshot/,
    );
    const fromListed = await fx.csi.controller<{ volume: CsiVolume }>('ControllerGetVolume', {
      volume_id: clone.volume_id,
    });
    expect(fromListed.volume.content_source).toMatchObject(source);

    // A snapshot outlives its source volume (a CO deletes a PVC and keeps its VolumeSnapshot), and a
    // restored volume outlives its snapshot (its replicas are copies).
    await fx.csi.controller('DeleteVolume', { volume_id: a });
    expect((await list({ source_volume_id: a })).entries.map((e) => e.snapshot.snapshot_id).sort()).toEqual(
      [uuid, generic.snapshot.snapshot_id].sort(),
    );
    expect((await snap(a, `snapshot-${uuid}`)).snapshot).toEqual(snapshot); // a CO's retry still answers
    await fx.csi.controller('DeleteSnapshot', { snapshot_id: uuid });
    expect((await fx.cluster.rest.getVolume(clone.volume_id)).spec.status).toBe('Created');
    await fx.csi.controller('DeleteVolume', { volume_id: clone.volume_id });
    for (const id of [uuid, generic.snapshot.snapshot_id, c1.snapshot_id]) {
      await fx.csi.controller('DeleteSnapshot', { snapshot_id: id });
      await fx.csi.controller('DeleteSnapshot', { snapshot_id: id }); // gone: OK
    }
    await fx.csi.controller('DeleteSnapshot', { snapshot_id: 'not-a-uuid' });
    expect((await list({})).entries).toEqual([]);
    for (const v of [a, b]) await fx.csi.controller('DeleteVolume', { volume_id: v });
  });
});

describe('ControllerExpandVolume', () => {
  it('grows a published volume online through core; a smaller request is OK; shrinking is OUT_OF_RANGE', async () => {
    await fx.cluster.rest.registerAppNode('csi-node-x', { endpoint: '127.0.0.1:10197' });
    const id = (
      await create(createRequest(`pvc-${randomUUID()}`, { parameters: { repl: '2', thin: 'true' } }))
    ).volume.volume_id;
    await publish(id, 'csi-node-x');
    const expand = (required: number, limit = 0, cap: unknown = mountCap()) =>
      fx.csi.controller<{ capacity_bytes: string; node_expansion_required: boolean }>(
        'ControllerExpandVolume',
        {
          volume_id: id,
          capacity_range: { required_bytes: String(required), limit_bytes: String(limit) },
          volume_capability: cap,
        },
      );
    expect(await expand(100 * MiB + 5)).toEqual({
      capacity_bytes: String(101 * MiB),
      node_expansion_required: true,
    });
    const v = await fx.cluster.rest.getVolume(id);
    expect(v.spec.size).toBe(101 * MiB);
    expect(v.state.target?.size).toBe(101 * MiB);
    expect(await expand(80 * MiB)).toEqual({
      capacity_bytes: String(101 * MiB),
      node_expansion_required: true,
    });
    expect(await expand(128 * MiB, 0, blockCap())).toEqual({
      capacity_bytes: String(128 * MiB),
      node_expansion_required: false,
    });
    await refused(expand(16 * MiB, 32 * MiB), grpc.status.OUT_OF_RANGE, /cannot shrink/);
    await refused(expand(256 * MiB, 0, mountCap('MULTI_NODE_MULTI_WRITER')), grpc.status.INVALID_ARGUMENT);
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: id });
    await fx.csi.controller('DeleteVolume', { volume_id: id });
    await fx.cluster.rest.deregisterAppNode('csi-node-x');
  });
});

describe('quiesceFs: freeze through the csi-node NodeFs service', () => {
  const fs = new FreezeServer();
  beforeAll(() => fs.start());
  afterAll(() => fs.stop());

  it('freezes before the snapshot and unfreezes after it, only where the volume is published and the node is known', async () => {
    await fx.cluster.rest.registerAppNode('csi-node-f', { endpoint: fs.endpoint });
    const id = (await create(createRequest(`pvc-${randomUUID()}`, { parameters: { repl: '1' } }))).volume
      .volume_id;
    // Not published anywhere: nothing to freeze.
    const s0 = (await snap(id, `snapshot-${randomUUID()}`, { quiesceFs: 'freeze' })).snapshot;
    expect(fs.calls).toEqual([]);

    await publish(id, 'csi-node-f');
    const s1 = (await snap(id, `snapshot-${randomUUID()}`, { quiesceFs: 'freeze' })).snapshot;
    expect(s1.ready_to_use).toBe(true);
    expect(fs.calls).toEqual([
      { rpc: 'Freeze', volume: id, timeoutMs: 5000, snapshots: 1 },
      { rpc: 'Unfreeze', volume: id, snapshots: 2 },
    ]);
    fs.calls = [];
    // quiesceFs none (the default): no call.
    const s2 = (await snap(id, `snapshot-${randomUUID()}`)).snapshot;
    expect(fs.calls).toEqual([]);

    // Not staged there as a filesystem: the snapshot is taken without freezing, nothing to thaw.
    fs.answer = 'not-found';
    const s3 = (await snap(id, `snapshot-${randomUUID()}`, { quiesceFs: 'freeze' })).snapshot;
    expect(fs.calls.map((c) => c.rpc)).toEqual(['Freeze']);
    fs.calls = [];

    // A failed freeze fails the snapshot before it is taken.
    fs.answer = 'fail';
    const failedId = randomUUID();
    await refused(
      snap(id, `snapshot-${failedId}`, { quiesceFs: 'freeze' }),
      grpc.status.INTERNAL,
      /could not freeze .* device busy; no snapshot taken/,
    );
    expect((await list({ snapshot_id: failedId })).entries).toEqual([]);
    fs.calls = [];

    // While a snapshot waits on its freeze, another operation on the volume is ABORTED.
    fs.answer = 'ok';
    let release!: () => void;
    fs.hold = new Promise<void>((r) => {
      release = r;
    });
    const pending = snap(id, `snapshot-${randomUUID()}`, { quiesceFs: 'freeze' });
    await waitFor(() => fs.calls.length === 1, { what: 'the freeze call' });
    await refused(snap(id, `snapshot-${randomUUID()}`), grpc.status.ABORTED, /already in progress/);
    await refused(
      fx.csi.controller('ControllerExpandVolume', {
        volume_id: id,
        capacity_range: { required_bytes: String(200 * MiB) },
      }),
      grpc.status.ABORTED,
    );
    release();
    fs.hold = null;
    const s4 = (await pending).snapshot;
    expect(fs.calls.map((c) => c.rpc)).toEqual(['Freeze', 'Unfreeze']);

    // A registered node whose service does not answer: UNAVAILABLE, no snapshot.
    await fx.cluster.rest.registerAppNode('csi-node-f', { endpoint: '127.0.0.1:9' });
    const deadId = randomUUID();
    await refused(snap(id, `snapshot-${deadId}`, { quiesceFs: 'freeze' }), grpc.status.UNAVAILABLE);
    expect((await list({ snapshot_id: deadId })).entries).toEqual([]);

    for (const s of [s0, s1, s2, s3, s4])
      await fx.csi.controller('DeleteSnapshot', { snapshot_id: s.snapshot_id });
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: id });
    await fx.csi.controller('DeleteVolume', { volume_id: id });
    await fx.cluster.rest.deregisterAppNode('csi-node-f');
  });
});
