import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzSettings, hostileString, show, withinDeadline } from '../../helpers/fuzz.js';
import { newVolumeId, TestCluster } from '../core/cluster.js';
import { CsiNodeFixture } from './fixture.js';

/** Requests each run sends (bounded for CI; STORCTL_FUZZ_RUNS raises it). */
const RUNS = 300;
/** Requests of the run around a real volume (each successful stage makes a filesystem). */
const REAL_RUNS = 100;
/** csi-node runs with --path-timeout 10s: every answer comes before this, whatever the request. */
const DEADLINE_MS = 20_000;

/** Where a fuzzed path may point outside the csi-node's root: must still not exist afterwards. */
const OUTSIDE = join(tmpdir(), `storctl-fuzz-csinode-outside-${process.pid}`);

const MODES = [
  'UNKNOWN',
  'SINGLE_NODE_WRITER',
  'SINGLE_NODE_READER_ONLY',
  'MULTI_NODE_READER_ONLY',
  'MULTI_NODE_SINGLE_WRITER',
  'MULTI_NODE_MULTI_WRITER',
  'SINGLE_NODE_SINGLE_WRITER',
  'SINGLE_NODE_MULTI_WRITER',
];

interface FuzzCall {
  service: 'node' | 'fs';
  method: string;
  req: Record<string, unknown>;
}

/** A real volume for the fuzzer to stage and publish: its id and NBD target URI. */
interface RealVolume {
  id: string;
  uri: string;
}

/** The staging and target paths a fuzzer with a real volume keeps coming back to. */
const realPaths = (root: string) => ['s1', 's2', 't1', 't2'].map((v) => join(root, 'pods', v));

function calls(root: string, real?: RealVolume): fc.Arbitrary<FuzzCall> {
  const str = (valid: fc.Arbitrary<string>) =>
    fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: hostileString() });
  const path = fc.oneof(
    { weight: real ? 16 : 4, arbitrary: fc.constantFrom(...realPaths(root)) },
    { weight: 2, arbitrary: hostileString().map((s) => join(root, 'pods', s)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        join(OUTSIDE, 'x'),
        `${root}/../${OUTSIDE.split('/').pop()}`,
        join(root, 'escape'),
        join(root, 'escape', 'x'),
        join(root, 'afile'),
        join(root, 'afile', 'x'),
        '/proc/self/x',
        '/dev/shm/storctl-fuzz',
        '/sys/kernel/x',
        '/',
        root,
        'relative/x',
        `${root}/pods/${'n'.repeat(300)}`,
      ),
    },
    { weight: 1, arbitrary: hostileString() },
  );
  const fakeUri = str(
    fc.constantFrom(
      'nbd://127.0.0.1:1/vol',
      'nbd://127.0.0.1:1/',
      'nbd://[::1]:1/vol',
      'nbd://10.255.255.1:10809/vol',
      'nbd://127.0.0.1:0/vol',
      'nbd://127.0.0.1:99999/vol',
      'nbd://localhost/vol',
      'nbd+unix:///vol?socket=/tmp/x',
      'http://127.0.0.1/vol',
      'file:///etc/passwd',
    ),
  );
  const uri = real
    ? fc.oneof({ weight: 6, arbitrary: fc.constant(real.uri) }, { weight: 1, arbitrary: fakeUri })
    : fakeUri;
  const capability = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        mount: fc.record({
          fs_type: str(fc.constantFrom('ext4', 'xfs', '', 'btrfs', 'fuse')),
          mount_flags: fc.array(str(fc.constantFrom('noatime', 'ro', 'discard', 'bind', 'ro,remount')), {
            maxLength: 3,
          }),
        }),
        access_mode: fc.record({
          mode: fc.oneof(
            { weight: 4, arbitrary: fc.constant('SINGLE_NODE_WRITER') },
            fc.constantFrom(...MODES),
            fc.integer({ min: 0, max: 50 }),
          ),
        }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        null,
        {},
        { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
        { block: {} },
      ),
    },
  );
  const volumeId = real
    ? fc.oneof(
        { weight: 8, arbitrary: fc.constant(real.id) },
        { weight: 1, arbitrary: str(fc.constantFrom('v1')) },
      )
    : str(fc.constantFrom('v1', 'v2'));
  const ctx = fc.dictionary(hostileString(), hostileString(), { maxKeys: 2 });
  const stage = fc.record({
    volume_id: volumeId,
    staging_target_path: path,
    publish_context: fc.oneof(fc.record({ uri }), ctx),
    volume_capability: capability,
    volume_context: ctx,
    secrets: ctx,
  });
  const publish = fc.record({
    volume_id: volumeId,
    staging_target_path: path,
    target_path: path,
    volume_capability: capability,
    readonly: fc.boolean(),
    publish_context: fc.oneof(fc.record({ uri }), ctx),
  });
  const bytes = fc.oneof(
    fc.constantFrom('0', '1', '-1', '9223372036854775807', '1073741824'),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  );
  const node = (method: string, req: fc.Arbitrary<Record<string, unknown>>) =>
    req.map((r): FuzzCall => ({ service: 'node', method, req: r }));
  // With a real volume, well-formed stages and publishes of it too, so the data path is exercised
  // (filesystems made, bind mounts, a second stage elsewhere, publishes of an unstaged path …).
  const good = (fsType: fc.Arbitrary<string>, readonly: fc.Arbitrary<boolean>) =>
    fc.record({
      volume_id: fc.constant(real?.id ?? 'v1'),
      staging_target_path: fc.constantFrom(...realPaths(root)),
      target_path: fc.constantFrom(...realPaths(root)),
      publish_context: fc.constant({ uri: real?.uri ?? '' }),
      volume_capability: fsType.map((fs_type) => ({
        mount: { fs_type, mount_flags: [] },
        access_mode: { mode: 'SINGLE_NODE_WRITER' },
      })),
      readonly,
      volume_context: fc.constant({}),
      secrets: fc.constant({}),
    });
  const realOnly = real
    ? [
        {
          weight: 8,
          arbitrary: node(
            'NodeStageVolume',
            good(fc.constantFrom('ext4', 'ext4', 'xfs'), fc.constant(false)),
          ),
        },
        {
          weight: 6,
          arbitrary: node('NodePublishVolume', good(fc.constantFrom('ext4', 'xfs'), fc.boolean())),
        },
      ]
    : [];
  return fc.oneof(
    ...realOnly,
    { weight: 4, arbitrary: node('NodeStageVolume', stage) },
    {
      weight: 2,
      arbitrary: node('NodeUnstageVolume', fc.record({ volume_id: volumeId, staging_target_path: path })),
    },
    { weight: 3, arbitrary: node('NodePublishVolume', publish) },
    {
      weight: 2,
      arbitrary: node('NodeUnpublishVolume', fc.record({ volume_id: volumeId, target_path: path })),
    },
    {
      weight: 1,
      arbitrary: node(
        'NodeGetVolumeStats',
        fc.record({ volume_id: volumeId, volume_path: path, staging_target_path: path }),
      ),
    },
    {
      weight: 1,
      arbitrary: node(
        'NodeExpandVolume',
        fc.record({
          volume_id: volumeId,
          volume_path: path,
          staging_target_path: path,
          capacity_range: fc.record({ required_bytes: bytes, limit_bytes: bytes }),
          volume_capability: capability,
        }),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('NodeGetInfo', 'NodeGetCapabilities').chain((m) => node(m, fc.constant({}))),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('Freeze', 'Unfreeze'), volumeId)
        .map(([method, id]): FuzzCall => ({ service: 'fs', method, req: { volume_id: id } })),
    },
  );
}

/** CSI codes a client mistake may earn; INTERNAL and UNKNOWN are the node plugin's own faults. */
const FAULTS = new Set([status.INTERNAL, status.UNKNOWN]);

/** Make the paths the fuzzer aims at: a pods dir, a symlink out of the root, a regular file. */
function prepareRoot(root: string): void {
  mkdirSync(join(root, 'pods'), { recursive: true });
  symlinkSync(OUTSIDE, join(root, 'escape'));
  writeFileSync(join(root, 'afile'), 'a regular file');
}

/** Send `runs` fuzzed calls; fail on INTERNAL/UNKNOWN or a missed deadline; the answers by kind. */
async function fuzz(
  node: CsiNodeFixture,
  suite: string,
  runs: number,
  real?: RealVolume,
): Promise<Map<string, number>> {
  const { seed, numRuns } = fuzzSettings(suite, runs);
  const codes = new Map<string, number>();
  const call = (c: FuzzCall) =>
    c.service === 'node' ? node.csi!.node(c.method, c.req) : node.fs!.call(c.method as 'Freeze', c.req);
  try {
    await fc.assert(
      fc.asyncProperty(calls(node.root, real), async (c) => {
        const err = await withinDeadline(
          show(c),
          DEADLINE_MS,
          call(c).then(
            () => undefined,
            (e: { code: status; details: string }) => e,
          ),
        );
        const name = `${c.method} ${err ? status[err.code] : 'OK'}`;
        codes.set(name, (codes.get(name) ?? 0) + 1);
        if (err && FAULTS.has(err.code))
          throw new Error(`${c.method} answered ${status[err.code]}: ${err.details}\nrequest: ${show(c)}`);
      }),
      { seed, numRuns, endOnFailure: true },
    );
  } finally {
    console.log(`[fuzz] ${suite} answers: ${JSON.stringify(Object.fromEntries([...codes].sort()))}`);
  }
  return codes;
}

/** Nothing of the csi-node's is left, nothing outside its root that a fuzzed path named; it serves on. */
async function expectClean(node: CsiNodeFixture): Promise<void> {
  expect(await node.leftovers()).toEqual([]);
  expect(existsSync(OUTSIDE), `${OUTSIDE} created by a fuzzed request`).toBe(false);
  for (const p of ['/dev/shm/storctl-fuzz', '/proc/self/x']) expect(existsSync(p), p).toBe(false);
  expect(await node.csi!.node('NodeGetInfo')).toMatchObject({ node_id: 'csi-node-1' });
  expect(node.proc!.running).toBe(true);
}

describe('fuzzing csi-node (the block CSI node plugin)', () => {
  const node = new CsiNodeFixture();

  beforeAll(async () => {
    await node.start();
    prepareRoot(node.root);
  }, 60_000);
  afterAll(async () => {
    await node.dispose();
  });

  it(`${RUNS} fuzzed CSI requests: no INTERNAL or UNKNOWN, each answered within ${DEADLINE_MS / 1000} s; nothing attached, mounted or created outside the root; the state decodes`, async () => {
    await fuzz(node, 'csi-node CSI', RUNS);
    await expectClean(node);
  }, 120_000);
});

describe('fuzzing csi-node with a real volume to stage and publish (io-engine NBD target)', () => {
  let cluster: TestCluster | undefined;
  let node: CsiNodeFixture | undefined;
  let real: RealVolume;
  beforeAll(async () => {
    cluster = await TestCluster.start({ engines: 1 });
    const id = newVolumeId();
    const published = await cluster.createPublished(id, { size: 64 << 20, replicas: 1, node: 'node-1' });
    real = { id, uri: published.state.target!.deviceUri! };
    node = new CsiNodeFixture(cluster.restUrl);
    await node.start();
    prepareRoot(node.root);
  }, 120_000);
  afterAll(async () => {
    await node?.dispose();
    await cluster?.stop();
  });

  // What the fuzzer found around a real volume, as named regression cases.
  const stageAt = (staging: string, fsType = 'ext4') =>
    node!.csi!.node('NodeStageVolume', {
      volume_id: real.id,
      staging_target_path: staging,
      publish_context: { uri: real.uri },
      volume_capability: {
        mount: { fs_type: fsType, mount_flags: [] },
        access_mode: { mode: 'SINGLE_NODE_WRITER' },
      },
    });
  const code = (p: Promise<unknown>) =>
    p.then(
      () => 'OK',
      (e: { code: status }) => status[e.code],
    );

  // First, while the volume is still blank (a filesystem on it would answer FAILED_PRECONDITION).
  it('regression (seed 1765247559): xfs on a volume too small for it is INVALID_ARGUMENT, and nothing is left', async () => {
    const [s1] = realPaths(node!.root);
    const err = await stageAt(s1, 'xfs').catch((e) => e);
    expect(status[err?.code]).toBe('INVALID_ARGUMENT');
    expect(err.details).toMatch(/too small for xfs.*ask for ext4 or a larger volume/);
    expect(await node!.leftovers()).toEqual([]);
  }, 60_000);

  it("regression (seed 185159298): an unpublish naming the staging path or another volume's target leaves it mounted", async () => {
    const [s1, , t1] = realPaths(node!.root);
    await stageAt(s1);
    await node!.csi!.node('NodePublishVolume', {
      volume_id: real.id,
      staging_target_path: s1,
      target_path: t1,
      volume_capability: {
        mount: { fs_type: 'ext4', mount_flags: [] },
        access_mode: { mode: 'SINGLE_NODE_WRITER' },
      },
      readonly: false,
    });
    // It unmounted and removed the staging directory before: a later Unfreeze answered INTERNAL.
    expect(await code(node!.csi!.node('NodeUnpublishVolume', { volume_id: real.id, target_path: s1 }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(
      await code(node!.csi!.node('NodeUnpublishVolume', { volume_id: 'another-volume', target_path: t1 })),
    ).toBe('FAILED_PRECONDITION');
    expect(await code(node!.fs!.call('Freeze', { volume_id: real.id }))).toBe('OK');
    expect(await code(node!.fs!.call('Unfreeze', { volume_id: real.id }))).toBe('OK');
    expect(await code(node!.csi!.node('NodeGetVolumeStats', { volume_id: real.id, volume_path: t1 }))).toBe(
      'OK',
    );
    await node!.csi!.node('NodeUnpublishVolume', { volume_id: real.id, target_path: t1 });
    await node!.csi!.node('NodeUnstageVolume', { volume_id: real.id, staging_target_path: s1 });
    expect(await node!.leftovers()).toEqual([]);
  }, 60_000);

  it(`${REAL_RUNS} fuzzed CSI requests around one real volume: no INTERNAL or UNKNOWN, within the deadline; after unpublish and unstage nothing is left`, async () => {
    const codes = await fuzz(node!, 'csi-node CSI (real volume)', REAL_RUNS, real);
    // The fuzzer did reach the real data path: some stage succeeded.
    expect(codes.get('NodeStageVolume OK') ?? 0, 'successful stages').toBeGreaterThan(0);
    // The CO's cleanup: every publish undone, then every stage (each path may have been either).
    // (An unpublish that names the staging path is refused: that one is unstaged below.)
    for (const p of realPaths(node!.root))
      await node!
        .csi!.node('NodeUnpublishVolume', { volume_id: real.id, target_path: p })
        .catch((e: { code: status }) => (e.code === status.INVALID_ARGUMENT ? undefined : Promise.reject(e)));
    for (const p of realPaths(node!.root))
      await node!.csi!.node('NodeUnstageVolume', { volume_id: real.id, staging_target_path: p });
    await expectClean(node!);
  }, 120_000);
});
