import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { MountState } from '../../../src/lib/mount/state.js';
import { fuzzSettings, hostileString, show, withinDeadline } from '../../helpers/fuzz.js';
import { S3RVER_KEYS } from '../../helpers/s3.js';
import { BUCKET, fuseMountsBelow, fuseProcessesBelow, processMounterFixture, targetPath } from './fixture.js';

/** Requests each run sends (bounded for CI; STORCTL_FUZZ_RUNS raises it). */
const RUNS = 400;
/** The fixture's mount timeout is 15 s: a publish answers before this, whatever it carries. */
const DEADLINE_MS = 20_000;

const fx = processMounterFixture('storctl-fuzz-mounter');

/** Where a fuzzed target may point outside the mounter's root: must still not exist afterwards. */
const OUTSIDE = join(tmpdir(), `storctl-fuzz-mounter-outside-${process.pid}`);

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
  method: string;
  req: Record<string, unknown>;
}

function calls(root: string): fc.Arbitrary<FuzzCall> {
  const pods = join(root, 'pods');
  const target = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom('a', 'b', 'c').map((v) => targetPath(fx.env, 'pod-f', `pv-${v}`)),
    },
    { weight: 2, arbitrary: hostileString().map((s) => join(pods, 'pod-f', s, 'mount')) },
    { weight: 1, arbitrary: hostileString().map((s) => `${pods}/${s}`) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        join(OUTSIDE, 'mount'),
        `${pods}/../../${OUTSIDE.split('/').pop()}/x`,
        join(root, 'escape', 'x'),
        join(root, 'escape'),
        '/proc/self/x',
        '/proc/self/cwd/x',
        '/dev/shm/storctl-fuzz',
        '/sys/kernel/x',
        '/',
        root,
        'relative/x',
        `${pods}/a/${'n'.repeat(300)}/mount`,
        join(root, 'afile'),
      ),
    },
    { weight: 1, arbitrary: hostileString() },
  );
  const str = (valid: fc.Arbitrary<string>) =>
    fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: hostileString() });
  const capability = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        mount: fc.record({
          fs_type: str(fc.constantFrom('', 'fuse', 'ext4')),
          mount_flags: fc.array(
            str(fc.constantFrom('allow-other', 'uid=1000', 'ro', '--read-only', 'max_stat_cache_size=10')),
            {
              maxLength: 3,
            },
          ),
        }),
        access_mode: fc.record({
          mode: fc.oneof(
            { weight: 4, arbitrary: fc.constant('MULTI_NODE_MULTI_WRITER') },
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
        { block: {} },
        { block: {}, access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' } },
      ),
    },
  );
  const context = fc.record(
    {
      bucketName: str(fc.constantFrom(BUCKET, BUCKET, 'no-such-bucket', 'ab', 'a'.repeat(64))),
      authenticationSource: str(fc.constantFrom('driver', 'secret', '')),
      mountOptions: str(fc.constantFrom('', 'allow-other', 'uid=0,gid=0', 'url=http://evil', 'prefix=a/')),
    },
    { requiredKeys: [] },
  );
  const secrets = fc.oneof(
    fc.constant({}),
    fc.constant({ access_key_id: S3RVER_KEYS.accessKeyId, secret_access_key: S3RVER_KEYS.secretAccessKey }),
    fc.constant({ access_key_id: 'NOSUCHKEY', secret_access_key: 'secret' }),
    fc.dictionary(
      str(fc.constantFrom('access_key_id', 'secret_access_key', 'session_token')),
      hostileString(),
      { maxKeys: 3 },
    ),
  );
  const volumeId = str(fc.constantFrom('pv-a', 'pv-b'));
  const publish = fc.record({
    volume_id: volumeId,
    target_path: target,
    readonly: fc.boolean(),
    volume_capability: capability,
    volume_context: context,
    secrets,
  });
  const unpublish = fc.record({ volume_id: volumeId, target_path: target });
  return fc.oneof(
    { weight: 6, arbitrary: publish.map((req) => ({ method: 'NodePublishVolume', req })) },
    { weight: 3, arbitrary: unpublish.map((req) => ({ method: 'NodeUnpublishVolume', req })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          'NodeGetInfo',
          'NodeGetCapabilities',
          'NodeStageVolume',
          'NodeUnstageVolume',
          'NodeGetVolumeStats',
          'NodeExpandVolume',
        )
        .chain((method) =>
          fc
            .record({ volume_id: volumeId, volume_path: target, staging_target_path: target })
            .map((req) => ({ method, req })),
        ),
    },
  );
}

/** CSI codes a client mistake may earn; INTERNAL and UNKNOWN are the mounter's own faults. */
const FAULTS = new Set([status.INTERNAL, status.UNKNOWN]);

/** What earlier runs found, replayed every run: the request and the code it must get. */
const REGRESSIONS: { name: string; call: (root: string) => FuzzCall; code: status }[] = [
  {
    // seed 2055264691: answered INTERNAL (ENOENT from stat) — confinement took the dangling symlink
    // for a missing directory below the root.
    name: 'a target that is a dangling symlink (to a path outside the root) → INVALID_ARGUMENT',
    call: (root) => ({
      method: 'NodePublishVolume',
      req: {
        volume_id: 'pv-a',
        target_path: join(root, 'escape'),
        readonly: false,
        volume_capability: {
          mount: { fs_type: 'fuse', mount_flags: [] },
          access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' },
        },
        volume_context: { bucketName: BUCKET, authenticationSource: 'secret', mountOptions: 'uid=0,gid=0' },
        secrets: { access_key_id: S3RVER_KEYS.accessKeyId, secret_access_key: S3RVER_KEYS.secretAccessKey },
      },
    }),
    code: status.INVALID_ARGUMENT,
  },
];

describe('fuzzing the S3 mounter CSI node service (process mounter, s3fs, s3rver)', () => {
  beforeAll(async () => {
    await mkdir(join(fx.env.root, 'pods'), { recursive: true });
    await symlink(OUTSIDE, join(fx.env.root, 'escape'));
    await writeFile(join(fx.env.root, 'afile'), 'a regular file');
  });

  it.each(REGRESSIONS)('regression: $name', async ({ call, code }) => {
    const c = call(fx.env.root);
    const err = await fx.csi.node(c.method, c.req).then(
      () => undefined,
      (e) => e,
    );
    expect(err?.code, err?.details).toBe(code);
    expect(existsSync(OUTSIDE)).toBe(false);
  });

  it(`${RUNS} fuzzed CSI requests: no INTERNAL or UNKNOWN, each answered within ${DEADLINE_MS / 1000} s; nothing mounted or created outside the root; the state file decodes`, async () => {
    const root = fx.env.root;
    const { seed, numRuns } = fuzzSettings('mounter CSI', RUNS);
    const codes = new Map<string, number>();
    const published = new Set<string>();
    try {
      await fc.assert(
        fc.asyncProperty(calls(root), async (c) => {
          const err = await withinDeadline(
            show(c),
            DEADLINE_MS,
            fx.csi.node(c.method, c.req).then(
              () => undefined,
              (e: { code: status; details: string }) => e,
            ),
          );
          const name = err ? status[err.code] : 'OK';
          codes.set(name, (codes.get(name) ?? 0) + 1);
          if (err && FAULTS.has(err.code))
            throw new Error(`${c.method} answered ${name}: ${err.details}\nrequest: ${show(c)}`);
          if (!err && c.method === 'NodePublishVolume') published.add(String(c.req.target_path));
        }),
        { seed, numRuns, endOnFailure: true },
      );
    } finally {
      console.log(
        `[fuzz] mounter CSI codes: ${JSON.stringify(Object.fromEntries([...codes].sort()))}; ${published.size} target(s) mounted`,
      );
      for (const target of published)
        await fx.csi.node('NodeUnpublishVolume', { volume_id: 'pv-a', target_path: target }).catch(() => {});
    }
    // Every mount was below the root and is gone with its unpublish; nothing outside the root exists.
    expect(await fuseMountsBelow(root)).toEqual([]);
    expect(await fuseProcessesBelow(root)).toEqual([]);
    expect(existsSync(OUTSIDE), `${OUTSIDE} created by a fuzzed request`).toBe(false);
    for (const p of ['/dev/shm/storctl-fuzz', '/proc/self/x']) expect(existsSync(p), p).toBe(false);
    // The state file decodes and holds no record; no credential file is left.
    const state = await MountState.load(join(fx.env.stateDir, 'mounts.json'));
    expect(state.all()).toEqual([]);
    expect(await readdir(join(fx.env.stateDir, 'credentials'))).toEqual([]);
    // The mounter still serves.
    expect(await fx.csi.node('NodeGetInfo')).toMatchObject({ node_id: 'node-1' });
  }, 120_000);
});
