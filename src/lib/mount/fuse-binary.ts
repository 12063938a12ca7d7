import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import { credentialFilePath, type S3Credentials } from './credentials.js';
import type { MountEntry } from './mountinfo.js';
import type { MountOptions } from './options-policy.js';

export type FuseBinaryName = 's3fs' | 'mount-s3';
export const FUSE_BINARIES: FuseBinaryName[] = ['mount-s3', 's3fs'];

/** What one FUSE daemon start needs; the endpoint and region are the daemon-wide settings. */
export interface FuseInvocation {
  bucket: string;
  target: string;
  options: MountOptions;
  readonly: boolean;
  endpoint?: string;
  region?: string;
  logFile: string;
  credentials: WrittenCredentials;
}

/** Credential files written for one target, and how to point the daemon at them (no secrets in env). */
export interface WrittenCredentials {
  files: string[];
  args: string[];
  env: Record<string, string>;
}

export class FuseOptionUnsupportedError extends Error {
  constructor(
    readonly option: string,
    binary: string,
    what = 'mount option',
  ) {
    super(`${what} '${option}' is not supported by ${binary}`);
  }
}

/** One FUSE binary behind one contract: argv in the foreground, its credential files, its mount-table look. */
export interface FuseAdapter {
  readonly name: FuseBinaryName;
  readonly path: string;
  /** Throws when this binary cannot use these credentials (checked before anything is written). */
  checkCredentials(creds: S3Credentials | undefined): void;
  writeCredentials(dir: string, id: string, creds: S3Credentials | undefined): Promise<WrittenCredentials>;
  /** argv[1] is the bucket and argv[2] the target, for every adapter (doctor relies on it). */
  args(inv: FuseInvocation): string[];
  isOurs(entry: MountEntry): boolean;
  /**
   * True when the daemon's log (truncated at its start) says its start-up check failed. Read once
   * the mount answers: a daemon that mounts before checking the bucket can answer requests
   * between a failed check and its exit.
   */
  startupFailed(log: string): boolean;
}

class S3fsAdapter implements FuseAdapter {
  readonly name = 's3fs' as const;
  constructor(readonly path: string) {}

  checkCredentials(creds: S3Credentials | undefined): void {
    // s3fs's passwd file has no place for a session token.
    if (creds?.sessionToken) throw new FuseOptionUnsupportedError('session_token', 's3fs', 'credential');
  }

  async writeCredentials(
    dir: string,
    id: string,
    creds: S3Credentials | undefined,
  ): Promise<WrittenCredentials> {
    this.checkCredentials(creds);
    if (!creds) return { files: [], args: ['-o', 'public_bucket=1'], env: {} };
    const file = credentialFilePath(dir, id, 'passwd-s3fs');
    await writeFileAtomic(file, `${creds.accessKeyId}:${creds.secretAccessKey}\n`);
    return { files: [file], args: ['-o', `passwd_file=${file}`], env: {} };
  }

  args(inv: FuseInvocation): string[] {
    const o = inv.options;
    for (const [key, name] of [
      ['dirMode', 'dir-mode'],
      ['fileMode', 'file-mode'],
      ['allowRoot', 'allow-root'],
    ] as const) {
      if (o[key] !== undefined) throw new FuseOptionUnsupportedError(name, 's3fs');
    }
    const source = o.prefix ? `${inv.bucket}:/${o.prefix.replace(/\/+$/, '')}` : inv.bucket;
    const args = [this.path, source, inv.target, '-f', '-o', `logfile=${inv.logFile}`];
    if (inv.endpoint) args.push('-o', `url=${inv.endpoint}`, '-o', 'use_path_request_style');
    if (inv.region) args.push('-o', `endpoint=${inv.region}`);
    args.push(...inv.credentials.args);
    if (inv.readonly || o.readOnly) args.push('-o', 'ro');
    if (o.allowOther) args.push('-o', 'allow_other');
    if (o.uid !== undefined) args.push('-o', `uid=${o.uid}`);
    if (o.gid !== undefined) args.push('-o', `gid=${o.gid}`);
    if (o.umask) args.push('-o', `umask=${o.umask}`);
    if (o.metadataTtl && /^\d+$/.test(o.metadataTtl)) args.push('-o', `stat_cache_expire=${o.metadataTtl}`);
    if (o.maxThreads) args.push('-o', `parallel_count=${o.maxThreads}`);
    if (o.partSize) args.push('-o', `multipart_size=${Math.max(5, Math.ceil(o.partSize / (1024 * 1024)))}`);
    return args;
  }

  isOurs(entry: MountEntry): boolean {
    return entry.fsType === 'fuse.s3fs';
  }

  /**
   * s3fs checks the bucket in its FUSE init, which completes before the kernel lets any request
   * through, and logs a failed check at [CRT] before it exits the loop. So once the mount has
   * answered, a failed check is already in the log (its only [CRT] lines at the log level we run).
   */
  startupFailed(log: string): boolean {
    return log.includes('[CRT]');
  }
}

class MountpointS3Adapter implements FuseAdapter {
  readonly name = 'mount-s3' as const;
  constructor(readonly path: string) {}

  checkCredentials(): void {}

  async writeCredentials(
    dir: string,
    id: string,
    creds: S3Credentials | undefined,
  ): Promise<WrittenCredentials> {
    if (!creds) return { files: [], args: ['--no-sign-request'], env: {} };
    const profile = `storctl-${id}`;
    const config = credentialFilePath(dir, id, 'aws-config');
    const credentials = credentialFilePath(dir, id, 'aws-credentials');
    const lines = [
      `[${profile}]`,
      `aws_access_key_id=${creds.accessKeyId}`,
      `aws_secret_access_key=${creds.secretAccessKey}`,
    ];
    if (creds.sessionToken) lines.push(`aws_session_token=${creds.sessionToken}`);
    await writeFileAtomic(config, `[profile ${profile}]\n`);
    await writeFileAtomic(credentials, `${lines.join('\n')}\n`);
    // Only paths and a profile name go into the environment; the keys stay in the 0600 files.
    return {
      files: [config, credentials],
      args: [],
      env: { AWS_PROFILE: profile, AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: credentials },
    };
  }

  args(inv: FuseInvocation): string[] {
    const o = inv.options;
    const args = [this.path, inv.bucket, inv.target, '--foreground'];
    if (inv.endpoint) args.push('--endpoint-url', inv.endpoint, '--force-path-style');
    if (inv.region) args.push('--region', inv.region);
    args.push(...inv.credentials.args);
    if (o.prefix) args.push('--prefix', o.prefix.endsWith('/') ? o.prefix : `${o.prefix}/`);
    if (inv.readonly || o.readOnly) args.push('--read-only');
    if (o.allowOther) args.push('--allow-other');
    if (o.allowRoot) args.push('--allow-root');
    if (o.allowDelete) args.push('--allow-delete');
    if (o.allowOverwrite) args.push('--allow-overwrite');
    if (o.uid !== undefined) args.push('--uid', String(o.uid));
    if (o.gid !== undefined) args.push('--gid', String(o.gid));
    if (o.dirMode) args.push('--dir-mode', o.dirMode);
    if (o.fileMode) args.push('--file-mode', o.fileMode);
    if (o.umask) throw new FuseOptionUnsupportedError('umask', 'mount-s3');
    if (o.metadataTtl) args.push('--metadata-ttl', o.metadataTtl);
    if (o.maxThreads) args.push('--max-threads', String(o.maxThreads));
    if (o.partSize) args.push('--part-size', String(o.partSize));
    return args;
  }

  isOurs(entry: MountEntry): boolean {
    return entry.source === 'mountpoint-s3';
  }

  /** mount-s3 checks the bucket before it mounts: a mount that answers has passed its check. */
  startupFailed(): boolean {
    return false;
  }
}

/** Is this mount-table entry an S3 FUSE mount of any supported binary? */
export function isS3FuseMount(entry: MountEntry): boolean {
  return entry.fsType === 'fuse.s3fs' || entry.source === 'mountpoint-s3';
}

async function findInPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const dirs = [
    ...(env.PATH ?? '').split(delimiter),
    '/usr/local/bin',
    '/usr/bin',
    '/bin',
    '/opt/mountpoint-s3-csi/bin',
  ];
  for (const dir of dirs) {
    if (!dir.startsWith('/')) continue;
    const p = join(dir, name);
    try {
      await access(p, constants.X_OK);
      return p;
    } catch {}
  }
  return undefined;
}

/** The adapter of one binary at a known path. */
export function fuseAdapterFor(name: FuseBinaryName, path: string): FuseAdapter {
  return name === 's3fs' ? new S3fsAdapter(path) : new MountpointS3Adapter(path);
}

/** The adapter for `--fuse-binary`, or the first installed one (mount-s3, then s3fs). */
export async function resolveFuseAdapter(
  choice: FuseBinaryName | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<FuseAdapter> {
  for (const name of choice ? [choice] : FUSE_BINARIES) {
    const path = await findInPath(name, env);
    if (path) return fuseAdapterFor(name, path);
  }
  throw new Error(
    choice
      ? `FUSE binary '${choice}' is not installed (not found in PATH)`
      : 'no S3 FUSE binary found: install s3fs (apt-get install s3fs) or mount-s3',
  );
}
