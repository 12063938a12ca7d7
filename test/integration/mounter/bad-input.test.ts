import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { publishRequest } from '../../helpers/csi-client.js';
import { BUCKET, fuseMountsBelow, fuseProcessesBelow, processMounterFixture, targetPath } from './fixture.js';

const fx = processMounterFixture('storctl-badin');

/** The call fails with `code` and a message matching `message`, and nothing was mounted or written. */
async function refused(req: unknown, code: status, message: RegExp, method = 'NodePublishVolume') {
  const err = await fx.csi.node(method, req).then(
    () => undefined,
    (e) => e,
  );
  expect(err, 'the call must fail').toBeDefined();
  expect(err.code).toBe(code);
  expect(err.details).toMatch(message);
  expect(await fuseMountsBelow(fx.env.root)).toEqual([]);
  expect(await fuseProcessesBelow(fx.env.root)).toEqual([]);
  expect(await readdir(join(fx.env.stateDir, 'credentials'))).toEqual([]);
  expect(existsSync(fx.env.targets)).toBe(false);
  return err.details as string;
}

const t = () => targetPath(fx.env, 'pod-x', 'pv-x');
const ok = () => ({ volumeId: 'pv-x', target: t(), bucket: BUCKET });

describe('bad NodePublishVolume input: clear errors, nothing mounted, nothing written', () => {
  it('missing required fields', async () => {
    await refused(
      { ...publishRequest(ok()), volume_id: '' },
      status.INVALID_ARGUMENT,
      /volume_id is required/,
    );
    await refused(
      { ...publishRequest(ok()), target_path: '' },
      status.INVALID_ARGUMENT,
      /target_path is required/,
    );
    await refused(
      { ...publishRequest(ok()), volume_capability: null },
      status.INVALID_ARGUMENT,
      /volume_capability is required/,
    );
    await refused(
      publishRequest({ volumeId: 'pv-x', target: t() }),
      status.INVALID_ARGUMENT,
      /bucketName is required/,
    );
    await refused(
      { volume_id: '', target_path: t() },
      status.INVALID_ARGUMENT,
      /volume_id is required/,
      'NodeUnpublishVolume',
    );
  });

  it('unsupported capabilities and bucket names', async () => {
    await refused(
      publishRequest({ ...ok(), mode: 'SINGLE_NODE_WRITER' }),
      status.INVALID_ARGUMENT,
      /access mode SINGLE_NODE_WRITER/,
    );
    await refused(
      {
        ...publishRequest(ok()),
        volume_capability: { block: {}, access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' } },
      },
      status.INVALID_ARGUMENT,
      /block access is not supported/,
    );
    await refused(
      publishRequest({ ...ok(), bucket: 'Bad_Bucket!' }),
      status.INVALID_ARGUMENT,
      /not a valid bucket name/,
    );
    await refused(
      publishRequest({ ...ok(), context: { authenticationSource: 'pod' } }),
      status.INVALID_ARGUMENT,
      /unknown authenticationSource 'pod'/,
    );
  });

  it('a bucket the S3 server does not have answers NOT_FOUND, naming the bucket and what to check', async () => {
    const details = await refused(
      publishRequest({ ...ok(), bucket: 'no-such-bucket' }),
      status.NOT_FOUND,
      /bucket 'no-such-bucket' not found at the S3 endpoint: check volume_context.bucketName/,
    );
    // The FUSE daemon's own words stay in the message for the operator.
    expect(details).toMatch(/FUSE daemon output: .*bucket or key not found/);
  });

  it('an access key the S3 server refuses answers PERMISSION_DENIED, never echoing the keys', async () => {
    const details = await refused(
      {
        ...publishRequest({ ...ok(), context: { authenticationSource: 'secret' } }),
        secrets: { access_key_id: 'NOSUCHKEY1234', secret_access_key: 'not-the-secret-9876' },
      },
      status.PERMISSION_DENIED,
      /the S3 endpoint refused the credentials for bucket 'bucket1': check the access key and secret/,
    );
    expect(details).toMatch(/FUSE daemon output: .*invalid credentials/);
    expect(details).not.toContain('NOSUCHKEY1234');
    expect(details).not.toContain('not-the-secret-9876');
    // The right key for the same bucket mounts: the refusal was the key's, not the bucket's.
    const target = t();
    await fx.csi.node('NodePublishVolume', publishRequest({ ...ok(), target }));
    await fx.csi.node('NodeUnpublishVolume', { volume_id: 'pv-x', target_path: target });
    expect(await fuseMountsBelow(fx.env.root)).toEqual([]);
    await rm(fx.env.targets, { recursive: true }); // the parents the publish made, for the next case
  });

  it('refused mount options name the option', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--endpoint-url=http://127.0.0.1:1'], {}, /'endpoint-url' is refused: redirects the S3 endpoint/],
      [[], { mountOptions: 'allow-other,url=http://evil.example' }, /'url' is refused/],
      [['--profile admin'], {}, /'profile' is refused: switches the credential profile/],
      [['passwd_file=/etc/passwd-s3fs'], {}, /'passwd-file' is refused/],
      [['--foreground'], {}, /'foreground' is refused/],
      [['-o allow_other,url=http://evil'], {}, /'-o' is refused: raw -o/],
      [['--region eu-west-1'], {}, /'region' is refused/],
      [['--no-such-option'], {}, /'no-such-option' is not allowed/],
      [['uid=abc'], {}, /'uid' needs an integer/],
      [['prefix=../other'], {}, /'prefix' needs a key prefix/],
      [['--dir-mode=0755'], {}, /'dir-mode' is not supported by s3fs/],
    ];
    for (const [mountFlags, context, message] of cases)
      await refused(publishRequest({ ...ok(), mountFlags, context }), status.INVALID_ARGUMENT, message);
  });

  it('path traversal and non-canonical target paths', async () => {
    const base = targetPath(fx.env, 'pod-x', 'pv-x');
    await refused(
      publishRequest({ ...ok(), target: `${fx.env.targets}/pod-x/../../../etc/evil` }),
      status.INVALID_ARGUMENT,
      /'\.\.' segments \(path traversal\)/,
    );
    await refused(
      publishRequest({ ...ok(), target: 'relative/mount' }),
      status.INVALID_ARGUMENT,
      /is not absolute/,
    );
    await refused(publishRequest({ ...ok(), target: `${base}/` }), status.INVALID_ARGUMENT, /canonical/);
    await refused(
      publishRequest({ ...ok(), target: `${base}\n` }),
      status.INVALID_ARGUMENT,
      /control characters/,
    );
    await refused(
      { volume_id: 'pv-x', target_path: `${fx.env.targets}/../x` },
      status.INVALID_ARGUMENT,
      /path traversal/,
      'NodeUnpublishVolume',
    );
  });

  it('oversized, non-printable or missing secrets; the message never echoes a value', async () => {
    const ctx = { authenticationSource: 'secret' };
    const big = 'A'.repeat(200);
    let msg = await refused(
      publishRequest({ ...ok(), context: ctx, secrets: { access_key_id: 'S3RVER', secret_access_key: big } }),
      status.INVALID_ARGUMENT,
      /secret_access_key/,
    );
    expect(msg).not.toContain(big);
    msg = await refused(
      publishRequest({
        ...ok(),
        context: ctx,
        secrets: { access_key_id: 'S3RVER', secret_access_key: 'bell\u0007secret' },
      }),
      status.INVALID_ARGUMENT,
      /secret_access_key/,
    );
    expect(msg).not.toContain('bell');
    await refused(
      publishRequest({ ...ok(), context: ctx, secrets: { access_key_id: 'S3RVER' } }),
      status.INVALID_ARGUMENT,
      /missing or invalid keys .*secret_access_key/,
    );
    await refused(
      publishRequest({
        ...ok(),
        context: ctx,
        secrets: { access_key_id: 'bad key!', secret_access_key: 'x' },
      }),
      status.INVALID_ARGUMENT,
      /access_key_id/,
    );
    await refused(publishRequest({ ...ok(), context: ctx }), status.INVALID_ARGUMENT, /carries no secrets/);
    await refused(
      publishRequest({
        ...ok(),
        context: ctx,
        secrets: { access_key_id: 'S3RVER', secret_access_key: 'x', session_token: 'tok' },
      }),
      status.INVALID_ARGUMENT,
      /credential 'session_token' is not supported by s3fs/,
    );
    await refused(
      publishRequest({
        ...ok(),
        context: ctx,
        secrets: { access_key_id: 'S3RVER', secret_access_key: 'x', huge: 'y'.repeat(9000) },
      }),
      status.INVALID_ARGUMENT,
      /too large/,
    );
  });
});

describe('targets confined to the mounter roots (hostile paths)', () => {
  const publishAt = (target: string) => publishRequest({ volumeId: 'pv-x', target, bucket: BUCKET });

  it('system directories and paths outside the roots are refused at once, and nothing is created', async () => {
    await refused(publishAt('/proc/self/x'), status.INVALID_ARGUMENT, /system directory/);
    await refused(publishAt('/dev/storctl-x'), status.INVALID_ARGUMENT, /system directory/);
    await refused(
      publishAt('/var/tmp/storctl-outside-root'),
      status.INVALID_ARGUMENT,
      /outside the allowed roots/,
    );
    expect(existsSync('/var/tmp/storctl-outside-root')).toBe(false);
    await refused(
      publishAt(join(fx.env.root, 'pods', 'x'.repeat(300), 'mount')),
      status.INVALID_ARGUMENT,
      /segment longer than 255 bytes/,
    );
  });

  it('a target reached through a symlink out of the root is refused', async () => {
    const link = join(fx.env.root, 'escape');
    await symlink('/var/tmp', link);
    try {
      await refused(
        publishAt(join(link, 'pv-x')),
        status.INVALID_ARGUMENT,
        /leads outside .* through a symlink/,
      );
    } finally {
      await rm(link);
    }
  });

  it('a regular file or a non-empty directory as target is the caller mistake it is', async () => {
    const dir = join(fx.env.root, 'given');
    await mkdir(dir);
    try {
      await writeFile(join(dir, 'file'), 'x');
      await expect(fx.csi.node('NodePublishVolume', publishAt(join(dir, 'file')))).rejects.toMatchObject({
        code: status.INVALID_ARGUMENT,
        details: expect.stringContaining('is not a directory'),
      });
      await expect(fx.csi.node('NodePublishVolume', publishAt(dir))).rejects.toMatchObject({
        code: status.FAILED_PRECONDITION,
        details: expect.stringContaining('is not empty'),
      });
      // Nothing of the caller's was touched.
      expect(await readFile(join(dir, 'file'), 'utf8')).toBe('x');
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('unpublish of a directory it never published leaves that directory alone', async () => {
    const dir = join(fx.env.root, 'never-published');
    await mkdir(dir);
    try {
      await fx.csi.node('NodeUnpublishVolume', { volume_id: 'pv-x', target_path: dir });
      expect(existsSync(dir)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a failed publish removes every directory it created on the way, and only those', async () => {
    const base = join(fx.env.root, 'pods-failed');
    await mkdir(base);
    try {
      const target = join(base, 'a', 'b', 'c');
      const err = await fx.csi
        .node('NodePublishVolume', publishRequest({ volumeId: 'pv-x', target, bucket: 'no-such-bucket' }))
        .catch((e) => e);
      expect(err?.code).toBeDefined();
      expect(existsSync(join(base, 'a'))).toBe(false);
      expect(existsSync(base)).toBe(true);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
