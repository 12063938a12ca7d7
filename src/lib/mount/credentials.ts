import { chmod, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Long-term S3 keys. Never logged: only ever written to 0600 files. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export class CredentialError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialError';
  }
}

const ACCESS_KEY_RE = /^[A-Za-z0-9]{1,128}$/;
const SECRET_RE = /^[A-Za-z0-9/+=._~-]{1,128}$/;
const TOKEN_RE = /^[A-Za-z0-9/+=._~-]{1,4096}$/;

/**
 * Validate keys from any source. The message names the bad field and the rule, never the value.
 * Surrounding whitespace (a trailing newline from a Secret file) is tolerated and trimmed.
 */
export function validateCredentials(
  raw: { accessKeyId?: string; secretAccessKey?: string; sessionToken?: string },
  source: string,
): S3Credentials {
  const bad: string[] = [];
  const accessKeyId = raw.accessKeyId?.trim() ?? '';
  const secretAccessKey = raw.secretAccessKey?.trim() ?? '';
  const sessionToken = raw.sessionToken?.trim() || undefined;
  if (!ACCESS_KEY_RE.test(accessKeyId)) bad.push('access_key_id (1-128 characters of A-Z a-z 0-9)');
  if (!SECRET_RE.test(secretAccessKey))
    bad.push('secret_access_key (1-128 printable characters of A-Z a-z 0-9 / + = . _ ~ -)');
  if (sessionToken !== undefined && !TOKEN_RE.test(sessionToken))
    bad.push('session_token (up to 4096 printable characters)');
  if (bad.length) throw new CredentialError(`missing or invalid keys in ${source}: ${bad.join('; ')}`);
  return { accessKeyId, secretAccessKey, sessionToken };
}

/** Keys from a NodePublish `secrets` map (`access_key_id`, `secret_access_key`, optional `session_token`). */
export function credentialsFromSecrets(secrets: Record<string, string>): S3Credentials {
  for (const [k, v] of Object.entries(secrets)) {
    if (k.length > 128 || v.length > 8192)
      throw new CredentialError(`secret '${k.slice(0, 64)}' is too large`);
  }
  return validateCredentials(
    {
      accessKeyId: secrets.access_key_id,
      secretAccessKey: secrets.secret_access_key,
      sessionToken: secrets.session_token,
    },
    'the NodePublish secrets',
  );
}

/** Driver-level keys: the daemon's AWS_* environment, else a secrets file of `key=value` lines. */
export async function loadDriverCredentials(
  env: NodeJS.ProcessEnv,
  secretsFile?: string,
): Promise<S3Credentials | undefined> {
  if (secretsFile) {
    const info = await stat(secretsFile);
    if (info.mode & 0o077)
      throw new CredentialError(
        `secrets file ${secretsFile} must not be readable by group or others (chmod 600)`,
      );
    const values: Record<string, string> = {};
    for (const line of (await readFile(secretsFile, 'utf8')).split('\n')) {
      const m = /^\s*([A-Za-z_]+)\s*=\s*(.*?)\s*$/.exec(line);
      if (m) values[m[1].toLowerCase()] = m[2];
    }
    return validateCredentials(
      {
        accessKeyId: values.access_key_id ?? values.aws_access_key_id,
        secretAccessKey: values.secret_access_key ?? values.aws_secret_access_key,
        sessionToken: values.session_token ?? values.aws_session_token,
      },
      `secrets file ${secretsFile}`,
    );
  }
  if (env.AWS_ACCESS_KEY_ID || env.AWS_SECRET_ACCESS_KEY) {
    return validateCredentials(
      {
        accessKeyId: env.AWS_ACCESS_KEY_ID,
        secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
        sessionToken: env.AWS_SESSION_TOKEN,
      },
      'the daemon environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)',
    );
  }
  return undefined;
}

/** The 0700 directory holding per-mount credential files. */
export async function ensureCredentialDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/** Credential files belong to one target: `<dir>/<targetId>.<kind>`. */
export const credentialFilePath = (dir: string, id: string, kind: string) => join(dir, `${id}.${kind}`);

export async function removeCredentialFiles(dir: string, id: string): Promise<string[]> {
  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = await readdir(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (name.startsWith(`${id}.`)) {
      await rm(join(dir, name), { force: true });
      removed.push(join(dir, name));
    }
  }
  return removed;
}
