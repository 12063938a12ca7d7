import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nexusInfoKey, objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { CsiClient, publishRequest } from '../../helpers/csi-client.js';
import { S3RVER_KEYS } from '../../helpers/s3.js';
import { createdVolumeSpec } from '../../helpers/specs.js';
import { runStorctl, type StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { BUCKET, cleanupRoot, type Env, makeEnv, mounterProcess, targetPath } from '../mounter/fixture.js';

/*
 * `storctl dump` after an S3 publish with credentials: the mount is live (its credential file holds
 * the keys in the data dir), the mounter's log and the store carry secrets too, and the bundle — a
 * real tar.gz, read back with tar — holds every part and none of the secrets.
 */

const random = (n: number) => crypto.randomUUID().replaceAll('-', '').slice(0, n).toUpperCase();
// The mount's keys come in the NodePublish request only (s3rver accepts its own keys alone): the
// bundle learns them from the credential file. The others are known only by their shape or name
// where they were logged or stored.
const mountKeys = [S3RVER_KEYS.accessKeyId, S3RVER_KEYS.secretAccessKey];
const volumeKeyId = `AKIA${random(16)}`;
const volumeSecret = `vs${random(30)}/${random(8)}`;
const volumeToken = `tok${random(28)}`;
// Driver-level keys, in the mounter's (and the operator's) environment.
const driverKeyId = `DRV${random(17)}`;
const driverSecret = `ds${random(30)}`;
const secrets = [...mountKeys, volumeKeyId, volumeSecret, volumeToken, driverKeyId, driverSecret];

const space = { clusterId: `dump-${process.pid}`, namespace: 'default' };

/** Every file below `dir`, as relative path → content. */
function readTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(relative(dir, p), readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

describe('storctl dump (built CLI, after an S3 publish with credentials)', () => {
  let env: Env;
  let dataDir: string;
  let storeUrl: string;
  let mounter: StorctlProcess;
  const volume = crypto.randomUUID();
  const deletedVolume = crypto.randomUUID();
  const deletedNexus = crypto.randomUUID();

  beforeAll(async () => {
    env = await makeEnv('storctl-dump');
    dataDir = join(env.root, 'data');
    mkdirSync(join(dataDir, 'logs'), { recursive: true });
    storeUrl = `sqlite:${join(dataDir, 'store.db')}`;
    mounter = mounterProcess(env, ['--mounter', 'process'], {
      stateDir: join(dataDir, 'mounter'),
      credentials: { accessKeyId: driverKeyId, secretAccessKey: driverSecret },
    });
    await waitFor(
      async () => mounter.output.includes('mounter listening') || (await mounter.failIfExited()),
      {
        what: 'mounter listening',
      },
    );
    const csi = new CsiClient(env.socket);
    try {
      await csi.node(
        'NodePublishVolume',
        publishRequest({
          volumeId: 'pv-1',
          target: targetPath(env, 'pod-1', 'pv-1'),
          bucket: BUCKET,
          context: { authenticationSource: 'secret' },
          secrets: { access_key_id: S3RVER_KEYS.accessKeyId, secret_access_key: S3RVER_KEYS.secretAccessKey },
        }),
      );
    } finally {
      csi.close();
    }
    // The role's log, as `storctl up` keeps it, plus what a careless tool could have logged there.
    writeFileSync(join(dataDir, 'logs', 'mounter.log'), mounter.output);
    appendFileSync(
      join(dataDir, 'logs', 'mounter.log'),
      [
        `s3fs: retrying with ${mountKeys.join(':')} as ${volumeKeyId}`,
        JSON.stringify({ msg: 'env', AWS_SECRET_ACCESS_KEY: driverSecret, sessionToken: volumeToken }),
        `exec s3fs -o passwd_file=/x AWS_ACCESS_KEY_ID=${driverKeyId}`,
        '',
      ].join('\n'),
    );
    // A stored value with a secret in it (a publish context copied from a StorageClass).
    const store = await openStore(storeUrl);
    await store.put(
      objectKey(space, 'VolumeSpec', volume),
      JSON.stringify(createdVolumeSpec(volume, { publish_context: { secret_access_key: volumeSecret } })),
    );
    // The NexusInfo of a volume long deleted: an orphan, which the bundle's orphans report names.
    await store.put(
      nexusInfoKey(space, deletedNexus, deletedVolume),
      JSON.stringify({ children: [], clean_shutdown: true }),
    );
    await store.close();
    // csi-node's state (as `up` keeps it in the data dir): the volume staged, its proxy's log.
    const volumeDir = join(dataDir, 'csi-node', 'v', volume);
    mkdirSync(volumeDir, { recursive: true });
    writeFileSync(join(volumeDir, 'proxy.log'), '{"msg":"path proxy ready"}\n{"msg":"reconnecting"}\n');
    writeFileSync(
      join(dataDir, 'csi-node', 'state.json'),
      JSON.stringify({
        version: 1,
        volumes: {
          [volume]: { volumeId: volume, dir: volumeDir, stagingPath: '/nowhere/globalmount', publishes: {} },
        },
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await mounter?.kill('SIGTERM');
    if (env) {
      await env.s3.stop();
      await cleanupRoot(env.root);
    }
  });

  it('the secrets are on disk where the bundle looks (so the check below can fail)', () => {
    const credDir = join(dataDir, 'mounter', 'credentials');
    const files = readdirSync(credDir)
      .map((n) => readFileSync(join(credDir, n), 'utf8'))
      .join('\n');
    expect(files).toContain(`${S3RVER_KEYS.accessKeyId}:${S3RVER_KEYS.secretAccessKey}`);
    expect(readFileSync(join(dataDir, 'logs', 'mounter.log'), 'utf8')).toContain(driverSecret);
  });

  it('writes a tar.gz named with the UTC time, with every part and none of the secrets', async () => {
    const out = join(env.root, 'out');
    mkdirSync(out);
    const r = await runStorctl(
      [
        'dump',
        '--store',
        storeUrl,
        '--cluster-id',
        space.clusterId,
        '--data-dir',
        dataDir,
        '--mounter-state-dir',
        join(dataDir, 'mounter'),
      ],
      { cwd: out, env: { AWS_ACCESS_KEY_ID: driverKeyId, AWS_SECRET_ACCESS_KEY: driverSecret } },
    );
    expect(r.code, r.stderr).toBe(0);
    const name = readdirSync(out)[0];
    expect(name).toMatch(/^storctl-dump-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ\.tar\.gz$/);
    expect(r.stdout.trim()).toBe(join(out, name));
    expect(statSync(join(out, name)).mode & 0o777).toBe(0o600);

    const x = join(out, 'x');
    mkdirSync(x);
    execFileSync('tar', ['-xzf', join(out, name), '-C', x]);
    const [root] = readdirSync(x);
    expect(`${root}.tar.gz`).toBe(name);
    const tree = readTree(join(x, root));
    const names = [...tree.keys()].sort();
    for (const part of [
      'store/dump.jsonl',
      'get/volumes.json',
      'get/nodes.json',
      'get/pools.json',
      'get/replicas.json',
      'get/nexuses.json',
      'get/snapshots.json',
      'get/switchovers.json',
      'get/events.json',
      'doctor/store.json',
      'doctor/mounts.json',
      'orphans.json',
      'versions.json',
      'logs/mounter.log',
      'mounter/mounts.json',
      'csi-node/state.json',
      'csi-node/owner.json',
      `logs/csi-node-proxy/${volume}.log`,
      'manifest.json',
    ])
      expect(names, part).toContain(part);
    expect(names.some((n) => n.includes('credentials'))).toBe(false);
    expect(
      JSON.parse(tree.get('get/volumes.json')!).map((v: { spec: { uuid: string } }) => v.spec.uuid),
    ).toEqual([volume]);
    expect(tree.get('store/dump.jsonl')).toContain(`VolumeSpec/${volume}`);
    // The volume written above has no replica: the doctor's report in the bundle says so.
    expect(JSON.parse(tree.get('doctor/store.json')!).findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ check: 'volume-without-replicas', subject: `VolumeSpec/${volume}` }),
      ]),
    );
    // The orphans report reads the data dir's csi-node state too (given by flag, not environment).
    expect(JSON.parse(tree.get('orphans.json')!)).toMatchObject([
      { kind: 'nexus-info', id: deletedNexus, volume: deletedVolume },
      { kind: 'csi-node-volume', id: volume },
    ]);
    expect(tree.get(`logs/csi-node-proxy/${volume}.log`)).toContain('reconnecting');
    expect(JSON.parse(tree.get('csi-node/owner.json')!)).toBeNull();
    expect(JSON.parse(tree.get('versions.json')!)).toMatchObject({ node: process.version, store: storeUrl });
    const manifest = JSON.parse(tree.get('manifest.json')!);
    expect(manifest.parts.find((p: { name: string }) => p.name === 'endpoints.json')).toMatchObject({
      ok: false,
    });
    expect(r.stderr).toContain('endpoints.json left out');
    expect(tree.get('logs/mounter.log')).toContain('mounter listening');
    expect(tree.get('logs/mounter.log')).toContain('<redacted>');

    for (const [file, text] of tree)
      for (const s of secrets) expect(text.includes(s), `${s} in ${file}`).toBe(false);
  });
});
