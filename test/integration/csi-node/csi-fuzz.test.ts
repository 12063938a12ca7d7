import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzSettings, hostileString, show, withinDeadline } from '../../helpers/fuzz.js';
import { CsiNodeFixture } from './fixture.js';

/** Requests each run sends (bounded for CI; STORCTL_FUZZ_RUNS raises it). */
const RUNS = 300;
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

function calls(root: string): fc.Arbitrary<FuzzCall> {
  const str = (valid: fc.Arbitrary<string>) =>
    fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: hostileString() });
  const path = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('s1', 's2', 't1', 't2').map((v) => join(root, 'pods', v)) },
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
  const uri = str(
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
  const volumeId = str(fc.constantFrom('v1', 'v2'));
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
  return fc.oneof(
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

describe('fuzzing csi-node (the block CSI node plugin)', () => {
  const node = new CsiNodeFixture();

  beforeAll(async () => {
    await node.start();
    mkdirSync(join(node.root, 'pods'), { recursive: true });
    symlinkSync(OUTSIDE, join(node.root, 'escape'));
    writeFileSync(join(node.root, 'afile'), 'a regular file');
  }, 60_000);
  afterAll(async () => {
    await node.dispose();
  });

  it(`${RUNS} fuzzed CSI requests: no INTERNAL or UNKNOWN, each answered within ${DEADLINE_MS / 1000} s; nothing attached, mounted or created outside the root; the state decodes`, async () => {
    const { seed, numRuns } = fuzzSettings('csi-node CSI', RUNS);
    const codes = new Map<string, number>();
    const call = (c: FuzzCall) =>
      c.service === 'node' ? node.csi!.node(c.method, c.req) : node.fs!.call(c.method as 'Freeze', c.req);
    try {
      await fc.assert(
        fc.asyncProperty(calls(node.root), async (c) => {
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
      console.log(`[fuzz] csi-node CSI answers: ${JSON.stringify(Object.fromEntries([...codes].sort()))}`);
    }
    // Nothing of the csi-node's is left (mounts, loop devices, proxies, files, state records), and
    // nothing exists outside its root that a fuzzed path named.
    expect(await node.leftovers()).toEqual([]);
    expect(existsSync(OUTSIDE), `${OUTSIDE} created by a fuzzed request`).toBe(false);
    for (const p of ['/dev/shm/storctl-fuzz', '/proc/self/x']) expect(existsSync(p), p).toBe(false);
    // It still serves.
    expect(await node.csi!.node('NodeGetInfo')).toMatchObject({ node_id: 'csi-node-1' });
    expect(node.proc!.running).toBe(true);
  }, 120_000);
});
