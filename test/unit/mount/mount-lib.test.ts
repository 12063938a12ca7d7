import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CredentialError,
  credentialsFromSecrets,
  validateCredentials,
} from '../../../src/lib/mount/credentials.js';
import { fuseAdapterFor, resolveFuseAdapter } from '../../../src/lib/mount/fuse-binary.js';
import { decodeMountPath, parseMountInfo } from '../../../src/lib/mount/mountinfo.js';
import {
  MountOptionError,
  parseMountOptions,
  splitOptionString,
} from '../../../src/lib/mount/options-policy.js';
import { validateTargetPath } from '../../../src/lib/mount/target-path.js';
import { parseUnitName, targetId, unitNameFor, uuidV5 } from '../../../src/lib/mount/unit-name.js';

describe('mountinfo parsing', () => {
  const text = [
    '36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue',
    '612 29 0:77 / /var/lib/kubelet/pods/a\\040b/vol\\134x\\011y rw,nosuid,nodev,relatime shared:301 - fuse.s3fs s3fs rw,user_id=0,group_id=0',
    '613 29 0:78 / /mnt/mp rw,nosuid,nodev,noatime - fuse mountpoint-s3 rw,user_id=0,group_id=0,default_permissions',
    'garbage line',
  ].join('\n');

  it('decodes octal escapes and splits optional fields', () => {
    const [a, b, c] = parseMountInfo(text);
    expect(a).toMatchObject({
      id: 36,
      parentId: 35,
      root: '/mnt1',
      mountPoint: '/mnt/parent',
      optionalFields: ['master:1'],
      fsType: 'ext3',
      source: '/dev/root',
    });
    expect(b.mountPoint).toBe('/var/lib/kubelet/pods/a b/vol\\x\ty');
    expect(b).toMatchObject({ fsType: 'fuse.s3fs', source: 's3fs', optionalFields: ['shared:301'] });
    expect(c).toMatchObject({ fsType: 'fuse', source: 'mountpoint-s3', optionalFields: [] });
    expect(parseMountInfo(text)).toHaveLength(3);
    expect(decodeMountPath('a\\012b')).toBe('a\nb');
  });
});

describe('unit names', () => {
  it('UUIDv5 matches the RFC 4122 algorithm (known vector)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      '2ed6657d-e927-568b-95e1-2665a8aea6a2',
    );
  });
  it('is derivable from the target and parses back', () => {
    const name = unitNameFor('/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/v/mount', '0.1.0');
    expect(name).toBe(
      `mount-s3-0.1.0-${targetId('/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/v/mount')}.service`,
    );
    expect(parseUnitName(name)).toEqual({
      version: '0.1.0',
      id: targetId('/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/v/mount'),
    });
    expect(parseUnitName('mount-s3-umount-x.service')).toBeUndefined();
  });
});

describe('mount option policy', () => {
  it('accepts allowed options in every spelling', () => {
    expect(
      parseMountOptions([
        '--allow-other',
        'uid=1000',
        '--gid 2000',
        'file_mode=0644',
        'prefix=/data/',
        '--metadata-ttl=indefinite',
        'ro',
      ]),
    ).toEqual({
      allowOther: true,
      uid: 1000,
      gid: 2000,
      fileMode: '0644',
      prefix: 'data/',
      metadataTtl: 'indefinite',
      readOnly: true,
    });
    expect(splitOptionString('allow-other, uid=1,\n gid=2')).toEqual(['allow-other', 'uid=1', 'gid=2']);
  });
  it.each([
    ['--endpoint-url=https://evil', 'endpoint-url'],
    ['url=https://evil', 'url'],
    ['--profile=x', 'profile'],
    ['--aws-max-attempts=3', 'aws-max-attempts'],
    ['-f', 'f'],
    ['--foreground', 'foreground'],
    ['-o allow_other', '-o'],
    ['-oallow_other', '-o'],
    ['credlib=libx.so', 'credlib'],
    ['--cache /tmp', 'cache'],
    ['--bogus', 'bogus'],
    ['uid=1,url=evil', 'uid'],
  ])('refuses %s and names %s', (entry, option) => {
    try {
      parseMountOptions([entry]);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(MountOptionError);
      expect((err as MountOptionError).option).toBe(option);
      expect((err as Error).message).toContain(`'${option}'`);
    }
  });
  it('refuses duplicates and exclusive pairs', () => {
    expect(() => parseMountOptions(['uid=1', 'uid=2'])).toThrow(/given twice/);
    expect(() => parseMountOptions(['allow-other', 'allow-root'])).toThrow(/exclude each other/);
  });
});

describe('target paths', () => {
  it.each([
    ['/var/lib/kubelet/pods/x/mount', undefined],
    ['', /required/],
    ['rel/path', /not absolute/],
    ['/a/../b', /path traversal/],
    ['/a/./b', /path traversal/],
    ['/a//b', /canonical/],
    ['/a/b/', /canonical/],
    ['/', /canonical/],
    ['/a/b\u0000', /control/],
  ])('%j', (path, problem) => {
    const r = validateTargetPath(path);
    if (problem) expect(r).toMatch(problem);
    else expect(r).toBeUndefined();
  });
});

describe('credentials validation', () => {
  it('accepts sane keys, trims whitespace', () => {
    expect(
      credentialsFromSecrets({ access_key_id: ' AKIAEXAMPLE ', secret_access_key: 'abc/DEF+ghi=\n' }),
    ).toEqual({
      accessKeyId: 'AKIAEXAMPLE',
      secretAccessKey: 'abc/DEF+ghi=',
      sessionToken: undefined,
    });
  });
  it('rejects bad keys without echoing them', () => {
    for (const raw of [
      { accessKeyId: 'has space', secretAccessKey: 'ok' },
      { accessKeyId: 'OK', secretAccessKey: 'x'.repeat(129) },
      { accessKeyId: 'OK', secretAccessKey: 'tab\tinside' },
      { accessKeyId: 'OK', secretAccessKey: 'ok', sessionToken: 'é' },
    ]) {
      expect(() => validateCredentials(raw, 'test')).toThrow(CredentialError);
      try {
        validateCredentials(raw, 'test');
      } catch (err) {
        for (const value of Object.values(raw)) {
          if (value.length > 2) expect((err as Error).message).not.toContain(value);
        }
      }
    }
  });
});

describe('FUSE adapters', () => {
  it('s3fs argv: foreground, endpoint and credentials from the daemon, bucket and target at argv[1..2]', async () => {
    const a = await resolveFuseAdapter('s3fs');
    const argv = a.args({
      bucket: 'b1',
      target: '/t',
      options: { allowOther: true, uid: 5, prefix: 'p/' },
      readonly: true,
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu-1',
      logFile: '/l.log',
      credentials: { files: [], args: ['-o', 'passwd_file=/c'], env: {} },
    });
    expect(argv.slice(1, 4)).toEqual(['b1:/p', '/t', '-f']);
    expect(argv.join(' ')).toContain(
      '-o url=http://127.0.0.1:9000 -o use_path_request_style -o endpoint=eu-1 -o passwd_file=/c -o ro -o allow_other -o uid=5',
    );
  });
});

describe('mount-s3 adapter (Mountpoint for S3)', () => {
  it('argv in the foreground with driver-owned endpoint flags; keys only in 0600 profile files', async () => {
    const a = fuseAdapterFor('mount-s3', '/usr/bin/mount-s3');
    const dir = await mkdtemp(join(tmpdir(), 'storctl-mps3-'));
    try {
      const creds = await a.writeCredentials(dir, 'id1', {
        accessKeyId: 'AKIA1',
        secretAccessKey: 'sekret',
        sessionToken: 'tok',
      });
      expect(creds.files).toHaveLength(2);
      for (const f of creds.files) expect((await stat(f)).mode & 0o777).toBe(0o600);
      expect(await readFile(creds.files[1], 'utf8')).toContain('aws_secret_access_key=sekret');
      expect(JSON.stringify(creds.env)).not.toContain('sekret');
      expect(creds.env.AWS_PROFILE).toBe('storctl-id1');
      const argv = a.args({
        bucket: 'b1',
        target: '/t',
        options: { allowOther: true, uid: 5, prefix: 'p', dirMode: '0750' },
        readonly: true,
        endpoint: 'http://127.0.0.1:9000',
        region: 'eu-1',
        logFile: '/l.log',
        credentials: creds,
      });
      expect(argv.slice(0, 4)).toEqual(['/usr/bin/mount-s3', 'b1', '/t', '--foreground']);
      expect(argv.join(' ')).toBe(
        '/usr/bin/mount-s3 b1 /t --foreground --endpoint-url http://127.0.0.1:9000 --force-path-style --region eu-1 --prefix p/ --read-only --allow-other --uid 5 --dir-mode 0750',
      );
      expect(a.isOurs({ source: 'mountpoint-s3', fsType: 'fuse' } as never)).toBe(true);
      expect(() =>
        a.args({
          bucket: 'b',
          target: '/t',
          options: { umask: '0022' },
          readonly: false,
          logFile: '',
          credentials: creds,
        }),
      ).toThrow(/'umask' is not supported by mount-s3/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
