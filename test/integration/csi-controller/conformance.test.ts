import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { CsiClient } from '../../helpers/csi-client.js';
import { runStorctl } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import {
  blockCap,
  type CsiVolume,
  controllerFixture,
  createRequest,
  DEFAULT_SIZE,
  MiB,
  mountCap,
  refused,
  startController,
} from './fixture.js';

/**
 * Conformance of the csi-controller's Identity and Controller services, written from the spec's
 * tables (reference/csi-spec.md): every RPC through the real unix socket, against a real core.
 */
const fx = controllerFixture('storctl-csi-conf');

const SELECTOR = { 'storctl.io/csi-node': 'storctl' };
const create = (req: unknown) => fx.csi.controller<{ volume: CsiVolume }>('CreateVolume', req);
const pkgVersion = async () =>
  JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')).version;

describe('csi-controller Identity', () => {
  it('GetPluginInfo names the driver and storctl version; capabilities; Probe is ready while core answers', async () => {
    expect((statSync(fx.socket).mode & 0o777).toString(8)).toBe('600');
    const info = await fx.csi.identity<{ name: string; vendor_version: string }>('GetPluginInfo');
    expect(info.name).toBe('io.storctl.csi-block');
    expect(info.vendor_version).toBe(await pkgVersion());
    const caps = await fx.csi.identity<{ capabilities: Record<string, { type: string } | null>[] }>(
      'GetPluginCapabilities',
    );
    expect(caps.capabilities.map((c) => c.service?.type ?? `expansion:${c.volume_expansion?.type}`)).toEqual([
      'CONTROLLER_SERVICE',
      'VOLUME_ACCESSIBILITY_CONSTRAINTS',
      'expansion:ONLINE',
    ]);
    expect(await fx.csi.identity('Probe')).toEqual({ ready: { value: true } });
  });

  it('Probe is FAILED_PRECONDITION while core does not answer; a stopped controller removes its socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'storctl-csi-probe-'));
    try {
      // A port nothing listens on: core is down.
      const { proc, socket } = await startController(dir, 'http://127.0.0.1:9', fx.cluster.env);
      const csi = new CsiClient(socket);
      try {
        await refused(
          csi.identity('Probe'),
          status.FAILED_PRECONDITION,
          /not ready: core REST API at http:\/\/127.0.0.1:9 is unreachable/,
        );
        await refused(csi.controller('ListVolumes', {}), status.UNAVAILABLE, /unreachable/);
        expect((await csi.identity<{ name: string }>('GetPluginInfo')).name).toBe('io.storctl.csi-block');
      } finally {
        csi.close();
      }
      expect(await proc.kill('SIGTERM')).toBe(0);
      expect(existsSync(socket)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ControllerGetCapabilities lists what is served and nothing newer than v1.10', async () => {
    const r = await fx.csi.controller<{ capabilities: { rpc: { type: string } }[] }>(
      'ControllerGetCapabilities',
    );
    expect(r.capabilities.map((c) => c.rpc.type).sort()).toEqual(
      [
        'CREATE_DELETE_VOLUME',
        'PUBLISH_UNPUBLISH_VOLUME',
        'LIST_VOLUMES',
        'GET_CAPACITY',
        'CREATE_DELETE_SNAPSHOT',
        'LIST_SNAPSHOTS',
        'CLONE_VOLUME',
        'EXPAND_VOLUME',
        'LIST_VOLUMES_PUBLISHED_NODES',
        'GET_VOLUME',
      ].sort(),
    );
    await refused(
      fx.csi.controller('ControllerModifyVolume', { volume_id: randomUUID() }),
      status.UNIMPLEMENTED,
    );
  });
});

describe('required fields and bad values are INVALID_ARGUMENT, nothing is created', () => {
  it('every RPC names its missing required field', async () => {
    const I = status.INVALID_ARGUMENT;
    const c = (m: string, req: unknown) => fx.csi.controller(m, req);
    await refused(create(createRequest('')), I, /name is required/);
    await refused(
      create({ ...createRequest('pvc-x'), volume_capabilities: [] }),
      I,
      /volume_capabilities is required/,
    );
    await refused(c('DeleteVolume', {}), I, /volume_id is required/);
    await refused(
      c('ControllerPublishVolume', { node_id: 'n', volume_capability: mountCap() }),
      I,
      /volume_id/,
    );
    await refused(
      c('ControllerPublishVolume', { volume_id: randomUUID(), volume_capability: mountCap() }),
      I,
      /node_id/,
    );
    await refused(
      c('ControllerPublishVolume', { volume_id: randomUUID(), node_id: 'n' }),
      I,
      /volume_capability/,
    );
    await refused(c('ControllerUnpublishVolume', {}), I, /volume_id/);
    await refused(c('ValidateVolumeCapabilities', { volume_capabilities: [mountCap()] }), I, /volume_id/);
    await refused(c('ValidateVolumeCapabilities', { volume_id: randomUUID() }), I, /volume_capabilities/);
    await refused(c('ControllerGetVolume', {}), I, /volume_id/);
    await refused(c('ControllerExpandVolume', { capacity_range: { required_bytes: '1' } }), I, /volume_id/);
    await refused(c('ControllerExpandVolume', { volume_id: randomUUID() }), I, /capacity_range/);
    await refused(c('CreateSnapshot', { name: 'snap' }), I, /source_volume_id/);
    await refused(c('CreateSnapshot', { source_volume_id: randomUUID() }), I, /name is required/);
    await refused(c('DeleteSnapshot', {}), I, /snapshot_id/);
    await refused(c('ListVolumes', { max_entries: -1 }), I, /max_entries/);
    await refused(create(createRequest('x'.repeat(129))), I, /longer than 128 bytes/);
  });

  it('parameters, capabilities and content sources the driver cannot serve', async () => {
    const I = status.INVALID_ARGUMENT;
    const p = (parameters: Record<string, string>) =>
      create(createRequest(`pvc-${randomUUID()}`, { parameters }));
    expect(await refused(p({ protocol: 'nvmf' }), I, /protocol='nvmf' is not served/)).toMatch(/serve nbd/);
    await refused(p({ repl: '0' }), I, /repl=0 must be between 1 and 255/);
    await refused(p({ repl: 'three' }), I, /repl='three' is not a number/);
    await refused(p({ thin: 'yes' }), I, /thin='yes' must be true or false/);
    await refused(p({ fsType: 'btrfs' }), I, /fsType='btrfs' is not supported/);
    await refused(p({ quiesceFs: 'sync' }), I, /quiesceFs='sync' must be none or freeze/);
    await refused(p({ colour: 'blue' }), I, /unknown parameter 'colour'/);
    await refused(
      p({ nodeHasTopologyKey: 'zone', poolHasTopologyKey: 'disk' }),
      I,
      /multiple topology parameters are not allowed/,
    );
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { caps: [mountCap('MULTI_NODE_MULTI_WRITER')] })),
      I,
      /access mode MULTI_NODE_MULTI_WRITER is not supported/,
    );
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { caps: [mountCap('SINGLE_NODE_WRITER', 'ntfs')] })),
      I,
      /fs_type 'ntfs' is not supported/,
    );
    await refused(
      create({ ...createRequest(`pvc-${randomUUID()}`), mutable_parameters: { iops: '100' } }),
      I,
      /mutable_parameters are not supported/,
    );
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { source: { volume: { volume_id: randomUUID() } } })),
      I,
      /volume content source .* is not supported/,
    );
    // Secrets are never logged, not even when the request fails.
    await refused(
      create({
        ...createRequest(`pvc-${randomUUID()}`, { parameters: { protocol: 'iscsi' } }),
        secrets: { password: 'hunter2-s3cr3t' },
      }),
      I,
    );
    await waitFor(() => /protocol='iscsi' is not served/.test(fx.proc.output), {
      what: 'the failure logged',
    });
    expect(fx.proc.output).not.toMatch(/hunter2-s3cr3t/);
    // The sidecars' own keys are accepted and not stored in the volume context.
    const ok = await p({ 'csi.storage.k8s.io/pvc/name': 'data-0', repl: '1' });
    expect(ok.volume.volume_context).toEqual({ repl: '1' });
    expect((await fx.cluster.rest.listVolumes()).map((v) => v.spec.uuid)).toEqual([ok.volume.volume_id]);
    await fx.csi.controller('DeleteVolume', { volume_id: ok.volume.volume_id });
  });

  it('the command refuses bad flags with exit code 2', async () => {
    const bad = await runStorctl(['daemon', 'csi-controller', '--endpoint', 'tcp://127.0.0.1:1']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--endpoint must be unix:/);
    const name = await runStorctl([
      'daemon',
      'csi-controller',
      '--endpoint',
      'unix:///tmp/x.sock',
      '--driver-name',
      'Not A Name',
    ]);
    expect(name.code).toBe(2);
    expect(name.stderr).toMatch(/--driver-name 'Not A Name' is not a domain name/);
  });
});

describe('CreateVolume and DeleteVolume', () => {
  it('pvc-<uuid> keeps its uuid, capacity is rounded up to whole MiB, topology in the reply; repeats are idempotent', async () => {
    const uuid = randomUUID();
    const req = createRequest(`pvc-${uuid}`, {
      required: 10 * MiB + 1,
      parameters: { repl: '2', thin: 'true' },
    });
    const { volume } = await create(req);
    expect(volume).toMatchObject({
      volume_id: uuid,
      capacity_bytes: String(11 * MiB),
      volume_context: { repl: '2', thin: 'true' },
      accessible_topology: [{ segments: SELECTOR }],
      content_source: null,
    });
    const v = await fx.cluster.rest.getVolume(uuid);
    expect(v.spec).toMatchObject({ size: 11 * MiB, num_replicas: 2, thin: true, status: 'Created' });
    // Same request, and a compatible range: OK with the same volume.
    expect((await create(req)).volume).toEqual(volume);
    expect(
      (await create({ ...req, capacity_range: { required_bytes: String(8 * MiB), limit_bytes: '0' } }))
        .volume,
    ).toEqual(volume);
    // Incompatible repeats: ALREADY_EXISTS, the volume unchanged.
    const E = status.ALREADY_EXISTS;
    await refused(create({ ...req, parameters: { repl: '1', thin: 'true' } }), E, /other parameters/);
    await refused(create({ ...req, volume_capabilities: [blockCap()] }), E, /other parameters, capabilities/);
    await refused(
      create({ ...req, capacity_range: { required_bytes: String(20 * MiB), limit_bytes: '0' } }),
      E,
      /outside the requested capacity_range/,
    );
    expect((await fx.cluster.rest.getVolume(uuid)).spec.size).toBe(11 * MiB);
    await fx.csi.controller('DeleteVolume', { volume_id: uuid });
    await fx.csi.controller('DeleteVolume', { volume_id: uuid }); // already gone: OK
    await fx.csi.controller('DeleteVolume', { volume_id: 'not-a-uuid' }); // cannot exist: OK
    expect(await fx.cluster.rest.listVolumes()).toEqual([]);
  });

  it('any other name maps to a stable UUID v5; no capacity_range gets the default size', async () => {
    const a = await create(createRequest('my volume/1'));
    expect(a.volume.volume_id).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(a.volume.capacity_bytes).toBe(String(DEFAULT_SIZE));
    expect((await create(createRequest('my volume/1'))).volume.volume_id).toBe(a.volume.volume_id);
    const b = await create(createRequest('my volume/2'));
    expect(b.volume.volume_id).not.toBe(a.volume.volume_id);
    for (const id of [a.volume.volume_id, b.volume.volume_id])
      await fx.csi.controller('DeleteVolume', { volume_id: id });
  });

  it('capacity ranges: limit honoured, impossible ranges OUT_OF_RANGE, unmet requisite topology RESOURCE_EXHAUSTED', async () => {
    // 10 MiB + 1 does not round to a whole MiB under a limit of 10 MiB + 4096: 4 KiB alignment instead.
    const odd = await create(
      createRequest(`pvc-${randomUUID()}`, { required: 10 * MiB + 1, limit: 10 * MiB + 4096 }),
    );
    expect(odd.volume.capacity_bytes).toBe(String(10 * MiB + 4096));
    const small = await create(createRequest(`pvc-${randomUUID()}`, { limit: 16 * MiB }));
    expect(small.volume.capacity_bytes).toBe(String(16 * MiB));
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { required: 20 * MiB, limit: 10 * MiB })),
      status.OUT_OF_RANGE,
      /limit_bytes .* is below required_bytes/,
    );
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { required: 1001, limit: 1010 })),
      status.OUT_OF_RANGE,
      /multiple of 512/,
    );
    // Larger than any pool: core cannot place it.
    await refused(
      create(createRequest(`pvc-${randomUUID()}`, { required: 8 * 1024 * MiB })),
      status.RESOURCE_EXHAUSTED,
    );
    await refused(
      create(
        createRequest(`pvc-${randomUUID()}`, {
          topology: { requisite: [{ segments: { 'topology.kubernetes.io/zone': 'mars' } }], preferred: [] },
        }),
      ),
      status.RESOURCE_EXHAUSTED,
      /requisite topology/,
    );
    const inZone = await create(
      createRequest(`pvc-${randomUUID()}`, {
        topology: {
          requisite: [{ segments: { ...SELECTOR, 'storctl.io/nodename': 'node-1' } }],
          preferred: [],
        },
      }),
    );
    expect(inZone.volume.accessible_topology).toEqual([{ segments: SELECTOR }]);
    for (const v of [odd, small, inZone])
      await fx.csi.controller('DeleteVolume', { volume_id: v.volume.volume_id });
  });

  it('topology parameters reach core as labelled placement', async () => {
    const uuid = randomUUID();
    await refused(
      create(createRequest(`pvc-${uuid}`, { parameters: { nodeAffinityTopologyLabel: 'zone: nowhere' } })),
      status.RESOURCE_EXHAUSTED,
    );
    await fx.cluster.rest.labelNode('node-2', 'zone', 'a');
    const { volume } = await create(
      createRequest(`pvc-${uuid}`, { parameters: { nodeAffinityTopologyLabel: 'zone: a' } }),
    );
    const v = await fx.cluster.rest.getVolume(volume.volume_id);
    expect(Object.values(v.state.replica_topology).map((r) => r.node)).toEqual(['node-2']);
    expect(v.spec.topology).toMatchObject({ node_topology: { labelled: { inclusion: { zone: 'a' } } } });
    await fx.csi.controller('DeleteVolume', { volume_id: volume.volume_id });
    await fx.cluster.rest.unlabelNode('node-2', 'zone');
  });

  it('a second operation on a volume while one is in flight is ABORTED', async () => {
    const req = createRequest(`pvc-${randomUUID()}`, { parameters: { repl: '3' } });
    const results = await Promise.allSettled([create(req), create(req)]);
    const codes = results.map((r) => (r.status === 'fulfilled' ? 0 : (r.reason as { code: number }).code));
    expect(codes.sort()).toEqual([0, status.ABORTED]);
    const id = (
      results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ volume: CsiVolume }>
    ).value.volume.volume_id;
    // Once it finished, the repeat is OK.
    expect((await create(req)).volume.volume_id).toBe(id);
    await fx.csi.controller('DeleteVolume', { volume_id: id });
  });
});

describe('ValidateVolumeCapabilities, ControllerGetVolume, ListVolumes, GetCapacity', () => {
  it('unknown ids are NOT_FOUND; capabilities are confirmed or explained', async () => {
    const N = status.NOT_FOUND;
    for (const id of [randomUUID(), 'not-a-uuid']) {
      await refused(
        fx.csi.controller('ValidateVolumeCapabilities', { volume_id: id, volume_capabilities: [mountCap()] }),
        N,
      );
      await refused(fx.csi.controller('ControllerGetVolume', { volume_id: id }), N);
      await refused(
        fx.csi.controller('ControllerExpandVolume', {
          volume_id: id,
          capacity_range: { required_bytes: String(MiB) },
        }),
        N,
      );
    }
    const { volume } = await create(createRequest(`pvc-${randomUUID()}`, { parameters: { repl: '1' } }));
    const ok = await fx.csi.controller<{ confirmed: unknown; message: string }>(
      'ValidateVolumeCapabilities',
      {
        volume_id: volume.volume_id,
        volume_capabilities: [mountCap(), blockCap('SINGLE_NODE_READER_ONLY')],
        volume_context: volume.volume_context,
      },
    );
    expect(ok.confirmed).toMatchObject({ volume_context: { repl: '1' } });
    const no = await fx.csi.controller<{ confirmed: unknown; message: string }>(
      'ValidateVolumeCapabilities',
      {
        volume_id: volume.volume_id,
        volume_capabilities: [mountCap('MULTI_NODE_READER_ONLY')],
      },
    );
    expect(no.confirmed).toBeNull();
    expect(no.message).toMatch(/access mode MULTI_NODE_READER_ONLY is not supported/);
    const got = await fx.csi.controller<{ volume: CsiVolume; status: { published_node_ids: string[] } }>(
      'ControllerGetVolume',
      { volume_id: volume.volume_id },
    );
    expect(got.volume).toMatchObject({ volume_id: volume.volume_id, capacity_bytes: String(DEFAULT_SIZE) });
    expect(got.status.published_node_ids).toEqual([]);
    await fx.csi.controller('DeleteVolume', { volume_id: volume.volume_id });
  });

  it('ListVolumes pages with max_entries / next_token over every volume; a bad token is ABORTED', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await create(createRequest(`pvc-${randomUUID()}`, { required: 4 * MiB }))).volume.volume_id);
    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const page = await fx.csi.controller<{ entries: { volume: CsiVolume }[]; next_token: string }>(
        'ListVolumes',
        {
          max_entries: 2,
          starting_token: token,
        },
      );
      expect(page.entries.length).toBeLessThanOrEqual(2);
      seen.push(...page.entries.map((e) => e.volume.volume_id));
      token = page.next_token;
      pages++;
    } while (token);
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual([...ids].sort());
    const all = await fx.csi.controller<{ entries: unknown[]; next_token: string }>('ListVolumes', {});
    expect(all.entries).toHaveLength(5);
    expect(all.next_token).toBe('');
    await refused(
      fx.csi.controller('ListVolumes', { max_entries: 2, starting_token: 'bogus' }),
      status.ABORTED,
    );
    await refused(
      fx.csi.controller('ListVolumes', { max_entries: 2, starting_token: '999' }),
      status.ABORTED,
    );
    for (const id of ids) await fx.csi.controller('DeleteVolume', { volume_id: id });
  });

  it('GetCapacity: free bytes of the online pools, per topology segment', async () => {
    type Cap = { available_capacity: string; maximum_volume_size: { value: string } };
    // Core's pool state follows the io-engines' polls (the previous test freed space): compare
    // answers given while the pools it reports stayed the same.
    const { pools, all, one } = await waitFor(
      async () => {
        const before = await fx.cluster.rest.listPools();
        const all = await fx.csi.controller<Cap>('GetCapacity', {});
        const one = await fx.csi.controller<Cap>('GetCapacity', {
          accessible_topology: { segments: { ...SELECTOR, 'storctl.io/nodename': 'node-2' } },
        });
        const pools = await fx.cluster.rest.listPools();
        return JSON.stringify(before) === JSON.stringify(pools) ? { pools, all, one } : null;
      },
      { what: 'pool state steady across GetCapacity' },
    );
    const free = (p: (typeof pools)[number]) => p.state!.capacity - p.state!.used;
    expect(Number(all.available_capacity)).toBe(pools.reduce((a, p) => a + free(p), 0));
    expect(Number(all.maximum_volume_size.value)).toBe(Math.max(...pools.map(free)));
    expect(Number(one.available_capacity)).toBe(free(pools.find((p) => p.state!.node === 'node-2')!));
    const elsewhere = await fx.csi.controller<Cap>('GetCapacity', {
      accessible_topology: { segments: { 'storctl.io/csi-node': 'other' } },
    });
    expect(elsewhere.available_capacity).toBe('0');
    const multi = await fx.csi.controller<Cap>('GetCapacity', {
      volume_capabilities: [mountCap('MULTI_NODE_MULTI_WRITER')],
    });
    expect(multi.available_capacity).toBe('0');
    await refused(
      fx.csi.controller('GetCapacity', { parameters: { protocol: 'iscsi' } }),
      status.INVALID_ARGUMENT,
    );
  });
});

describe('ControllerPublishVolume / ControllerUnpublishVolume', () => {
  it('publishes through core to a known node: publish_context.uri is the NBD target; idempotent; one node at a time', async () => {
    await fx.cluster.rest.registerAppNode('csi-node-a', { endpoint: '127.0.0.1:10199' });
    await fx.cluster.rest.registerAppNode('csi-node-b', { endpoint: '127.0.0.1:10198' });
    const { volume } = await create(createRequest(`pvc-${randomUUID()}`, { parameters: { repl: '2' } }));
    const id = volume.volume_id;
    const pub = (node: string, extra: Record<string, unknown> = {}) =>
      fx.csi.controller<{ publish_context: Record<string, string> }>('ControllerPublishVolume', {
        volume_id: id,
        node_id: node,
        volume_capability: mountCap(),
        readonly: false,
        ...extra,
      });
    await refused(pub('no-such-node'), status.NOT_FOUND, /node 'no-such-node' is unknown/);
    await refused(
      fx.csi.controller('ControllerPublishVolume', {
        volume_id: randomUUID(),
        node_id: 'csi-node-a',
        volume_capability: mountCap(),
      }),
      status.NOT_FOUND,
    );
    await refused(pub('csi-node-a', { readonly: true }), status.INVALID_ARGUMENT, /readonly/);
    await refused(
      pub('csi-node-a', { volume_capability: mountCap('MULTI_NODE_MULTI_WRITER') }),
      status.INVALID_ARGUMENT,
    );
    const first = await pub('csi-node-a');
    expect(first.publish_context.uri).toMatch(/^nbd:\/\/[^/]+:\d+\/.+/);
    const v = await fx.cluster.rest.getVolume(id);
    expect(first.publish_context.uri).toBe(v.state.target?.deviceUri);
    expect(v.spec.target?.frontend_nodes?.map((f) => f.name)).toEqual(['csi-node-a']);
    expect(await pub('csi-node-a')).toEqual(first);
    await refused(pub('csi-node-b'), status.FAILED_PRECONDITION, /published to node\(s\) csi-node-a/);
    const got = await fx.csi.controller<{ status: { published_node_ids: string[] } }>('ControllerGetVolume', {
      volume_id: id,
    });
    expect(got.status.published_node_ids).toEqual(['csi-node-a']);
    const listed = await fx.csi.controller<{
      entries: { volume: CsiVolume; status: { published_node_ids: string[] } }[];
    }>('ListVolumes', {});
    expect(listed.entries.find((e) => e.volume.volume_id === id)?.status.published_node_ids).toEqual([
      'csi-node-a',
    ]);
    // An io-engine node id is a node too: a multi-replica volume's target goes there.
    // Unpublish from a node it is not published to: OK, still published.
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: id, node_id: 'csi-node-b' });
    expect((await fx.cluster.rest.getVolume(id)).spec.target).toBeDefined();
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: id, node_id: 'csi-node-a' });
    expect((await fx.cluster.rest.getVolume(id)).spec.target).toBeUndefined();
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: id, node_id: 'csi-node-a' });
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: randomUUID() });
    // Now node b may have it; and an io-engine node id is accepted (the target goes local).
    expect((await pub('csi-node-b')).publish_context.uri).toMatch(/^nbd:\/\//);
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: id });
    const local = await pub('node-3');
    expect((await fx.cluster.rest.getVolume(id)).spec.target?.node).toBe('node-3');
    expect(local.publish_context.uri).toMatch(/^nbd:\/\//);
    // Published, the volume is in use: DeleteVolume is FAILED_PRECONDITION and deletes nothing.
    await refused(
      fx.csi.controller('DeleteVolume', { volume_id: id }),
      status.FAILED_PRECONDITION,
      /is published on node 'node-3'/,
    );
    expect((await fx.cluster.rest.getVolume(id)).state.target?.deviceUri).toBe(local.publish_context.uri);
    await fx.csi.controller('ControllerUnpublishVolume', { volume_id: id, node_id: 'node-3' });
    await fx.csi.controller('DeleteVolume', { volume_id: id });
    await fx.cluster.rest.deregisterAppNode('csi-node-a');
    await fx.cluster.rest.deregisterAppNode('csi-node-b');
  });
});
