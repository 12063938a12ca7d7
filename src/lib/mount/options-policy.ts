/**
 * Mount options a volume may carry (PV mountOptions / volume context `mountOptions`). The endpoint,
 * region and credentials are the cluster admin's (daemon flags); a volume must not redirect the
 * endpoint, switch credentials or profiles, keep the daemon in the foreground, or inject raw `-o`
 * strings (reference drivers' argument policy). Everything not on the allow list is refused, and the
 * error names the option.
 */

export interface MountOptions {
  allowOther?: boolean;
  allowRoot?: boolean;
  uid?: number;
  gid?: number;
  dirMode?: string;
  fileMode?: string;
  umask?: string;
  prefix?: string;
  readOnly?: boolean;
  allowDelete?: boolean;
  allowOverwrite?: boolean;
  metadataTtl?: string;
  maxThreads?: number;
  partSize?: number;
}

export class MountOptionError extends Error {
  constructor(
    readonly option: string,
    message: string,
  ) {
    super(message);
    this.name = 'MountOptionError';
  }
}

const REFUSED: Record<string, string> = {
  'endpoint-url': 'redirects the S3 endpoint (the endpoint is a cluster-wide daemon setting)',
  endpoint: 'redirects the S3 endpoint or region (cluster-wide daemon settings)',
  url: 'redirects the S3 endpoint (the endpoint is a cluster-wide daemon setting)',
  host: 'redirects the S3 endpoint (the endpoint is a cluster-wide daemon setting)',
  servicepath: 'redirects the S3 endpoint (the endpoint is a cluster-wide daemon setting)',
  region: 'changes the region (a cluster-wide daemon setting)',
  'force-path-style': 'changes the endpoint addressing (a cluster-wide daemon setting)',
  'use-path-request-style': 'changes the endpoint addressing (a cluster-wide daemon setting)',
  'ca-bundle': 'replaces the trusted CA bundle',
  'no-check-certificate': 'disables TLS verification',
  'ssl-verify-hostname': 'disables TLS verification',
  profile: 'switches the credential profile (credentials come from the driver or the volume secret)',
  'passwd-file': 'switches credentials (credentials come from the driver or the volume secret)',
  'aws-access-key-id': 'switches credentials',
  'aws-secret-access-key': 'switches credentials',
  'iam-role': 'switches credentials',
  ecs: 'switches credentials',
  credlib: 'loads a credential library',
  'credlib-opts': 'loads a credential library',
  'no-sign-request': 'switches credentials (anonymous access)',
  foreground: 'the mounter controls how the FUSE daemon runs',
  f: 'the mounter controls how the FUSE daemon runs',
  o: 'raw -o option strings are not accepted; give each option on its own',
  'log-directory': 'the mounter controls the daemon log',
  logfile: 'the mounter controls the daemon log',
  l: 'the mounter controls the daemon log',
  cache: 'host cache directories are not managed by this driver',
  'use-cache': 'host cache directories are not managed by this driver',
  'cache-xz': 'not supported by this driver',
  'incremental-upload': 'not supported by this driver',
  'storage-class': 'not supported by this driver',
  'user-agent-prefix': 'set by the driver',
  help: 'not a mount option',
  h: 'not a mount option',
  version: 'not a mount option',
  v: 'not a mount option',
};

type Parser = (value: string | undefined, opts: MountOptions, name: string) => void;

const flag =
  (key: keyof MountOptions): Parser =>
  (value, opts, name) => {
    if (value !== undefined && value !== 'true')
      throw new MountOptionError(name, `mount option '${name}' takes no value`);
    (opts as Record<string, unknown>)[key] = true;
  };
const intValue =
  (key: keyof MountOptions, max: number): Parser =>
  (value, opts, name) => {
    if (value === undefined || !/^\d{1,10}$/.test(value) || Number(value) > max) {
      throw new MountOptionError(name, `mount option '${name}' needs an integer value from 0 to ${max}`);
    }
    (opts as Record<string, unknown>)[key] = Number(value);
  };
const octal =
  (key: keyof MountOptions): Parser =>
  (value, opts, name) => {
    if (value === undefined || !/^0?[0-7]{3}$/.test(value))
      throw new MountOptionError(name, `mount option '${name}' needs an octal mode such as 0755`);
    (opts as Record<string, unknown>)[key] = value.padStart(4, '0');
  };

const ALLOWED: Record<string, Parser> = {
  'allow-other': flag('allowOther'),
  'allow-root': flag('allowRoot'),
  'read-only': flag('readOnly'),
  ro: flag('readOnly'),
  'allow-delete': flag('allowDelete'),
  'allow-overwrite': flag('allowOverwrite'),
  uid: intValue('uid', 4294967294),
  gid: intValue('gid', 4294967294),
  'dir-mode': octal('dirMode'),
  'file-mode': octal('fileMode'),
  umask: octal('umask'),
  'max-threads': intValue('maxThreads', 1024),
  'part-size': intValue('partSize', 5 * 1024 * 1024 * 1024),
  'metadata-ttl': (value, opts, name) => {
    if (value === undefined || !/^(\d{1,9}|indefinite|minimal)$/.test(value)) {
      throw new MountOptionError(name, `mount option '${name}' needs seconds, 'indefinite' or 'minimal'`);
    }
    opts.metadataTtl = value;
  },
  prefix: (value, opts, name) => {
    if (
      value === undefined ||
      !/^[A-Za-z0-9!_.*'()/-]{1,512}$/.test(value) ||
      value.split('/').some((s) => s === '..' || s === '.')
    ) {
      throw new MountOptionError(
        name,
        `mount option '${name}' needs a key prefix of [A-Za-z0-9!_.*'()/-] without '.' or '..' segments`,
      );
    }
    opts.prefix = value.replace(/^\/+/, '');
  },
};

/** Split `a,b=1 --c 2` style strings into single options (the volume-context form). */
export function splitOptionString(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Parse and police the mount options of one volume. Each entry is `key`, `key=value` or
 * `key value`, with or without leading dashes; `_` and `-` are equivalent in keys.
 */
export function parseMountOptions(entries: string[]): MountOptions {
  const opts: MountOptions = {};
  const seen = new Set<string>();
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    if (entry.length > 1024)
      throw new MountOptionError(entry.slice(0, 32), 'a mount option is longer than 1024 characters');
    const dashes = /^-{1,2}/.exec(entry)?.[0] ?? '';
    const body = entry.slice(dashes.length);
    // `-o foo` / `-ofoo`: raw option strings are refused whatever they contain.
    if (dashes === '-' && body.startsWith('o'))
      throw new MountOptionError('-o', `mount option '-o' is refused: ${REFUSED.o}`);
    const m = /^([A-Za-z][A-Za-z0-9_-]*)(?:[= ](.*))?$/s.exec(body);
    if (!m) throw new MountOptionError(entry, `mount option '${entry}' is malformed`);
    const name = m[1].toLowerCase().replace(/_/g, '-');
    const value = m[2]?.trim();
    // biome-ignore lint/suspicious/noControlCharactersInRegex: values must be printable
    if (value !== undefined && /[\x00-\x1f\x7f,]/.test(value))
      throw new MountOptionError(
        name,
        `mount option '${name}' has a value with control characters or commas`,
      );
    const refusedReason =
      REFUSED[name] ?? (name.startsWith('aws-') ? 'switches credentials or AWS settings' : undefined);
    if (refusedReason)
      throw new MountOptionError(name, `mount option '${name}' is refused: ${refusedReason}`);
    const parser = ALLOWED[name];
    if (!parser) {
      throw new MountOptionError(
        name,
        `mount option '${name}' is not allowed (allowed: ${Object.keys(ALLOWED).sort().join(', ')})`,
      );
    }
    if (seen.has(name)) throw new MountOptionError(name, `mount option '${name}' is given twice`);
    seen.add(name);
    parser(value, opts, name);
  }
  if (opts.allowOther && opts.allowRoot)
    throw new MountOptionError(
      'allow-root',
      "mount options 'allow-other' and 'allow-root' exclude each other",
    );
  return opts;
}
