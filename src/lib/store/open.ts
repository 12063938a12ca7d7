import { existsSync } from 'node:fs';
import { StoreUnavailableError, UsageError } from '../errors.js';
import { EmbeddedStore } from './embedded.js';
import type { Store } from './types.js';

export interface StoreTlsFiles {
  /** CA bundle (PEM file path) to verify the etcd servers. */
  ca?: string;
  /** Client certificate (PEM file path). */
  cert?: string;
  /** Client private key (PEM file path). */
  key?: string;
}

export interface OpenStoreOptions {
  tls?: StoreTlsFiles;
  /** How long to wait for etcd to answer the connect check. */
  connectTimeoutMs?: number;
  /**
   * Only an embedded store that exists: operator commands read a cluster's store, and one made empty
   * for them would answer "No resources found" about a cluster that is elsewhere.
   */
  existing?: boolean;
}

export type StoreLocation =
  | { backend: 'embedded'; path: string }
  | { backend: 'etcd'; hosts: string[]; secure: boolean };

const EXAMPLES =
  'e.g. --store etcd://127.0.0.1:2379,10.0.0.2:2379 (etcd+https:// for TLS) or --store sqlite:/var/lib/storctl/store.db';

/** Parse a `--store` URL: `etcd://h1:2379,h2:2379`, `etcd+https://…`, or `sqlite:PATH`. */
export function parseStoreUrl(url: string, options: { tls?: StoreTlsFiles } = {}): StoreLocation {
  if (typeof url !== 'string' || url.trim() === '') throw new UsageError(`no store given; ${EXAMPLES}`);
  const bad = (why: string) => new UsageError(`invalid store '${url}': ${why}; ${EXAMPLES}`);
  if (url.startsWith('sqlite:')) {
    let path = url.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2); // sqlite:///abs/path
    if (path === '') throw bad('the sqlite: URL names no file');
    return { backend: 'embedded', path };
  }
  const m = /^etcd(\+https?)?:\/\/(.+)$/.exec(url);
  if (!m) throw bad('it must start with etcd://, etcd+https:// or sqlite:');
  const tls = options.tls ?? {};
  const secure = m[1] === '+https' || Boolean(tls.ca || tls.cert || tls.key);
  if (m[1] === '+http' && (tls.ca || tls.cert || tls.key))
    throw bad('etcd+http:// cannot be combined with TLS files');
  const hosts = m[2].split(',').map((h) => {
    const host = h.trim().replace(/\/$/, '');
    const hp = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(host);
    if (!hp) throw bad(`'${h}' is not host:port`);
    const port = hp[2] === undefined ? 2379 : Number(hp[2]);
    if (port < 1 || port > 65535) throw bad(`port ${port} is out of range`);
    return `${secure ? 'https' : 'http'}://${hp[1]}:${port}`;
  });
  return { backend: 'etcd', hosts, secure };
}

/**
 * Open the store a `--store` URL names. etcd is checked with one short request, so an unreachable
 * etcd fails fast with StoreUnavailableError (exit 5) instead of hanging in retries.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const location = parseStoreUrl(url, options);
  if (location.backend === 'embedded') {
    if (options.existing && !existsSync(location.path)) throw noEmbeddedStore(url, location.path);
    return EmbeddedStore.open(location.path);
  }
  // Loaded on demand: commands on the embedded store never pay for gRPC and etcd3.
  const { EtcdStore } = await import('./etcd.js');
  return EtcdStore.connect({
    hosts: location.hosts,
    tls: location.secure ? (options.tls ?? {}) : undefined,
    connectTimeoutMs: options.connectTimeoutMs ?? 3_000,
  });
}

function noEmbeddedStore(url: string, path: string): StoreUnavailableError {
  return new StoreUnavailableError(url, `there is no store file ${path}`, {
    suggestions: [
      'start a cluster with `storctl up` (with --data-dir DIR, run commands with STORCTL_DATA_DIR=DIR)',
      "or point at your cluster's store: --store sqlite:PATH or --store etcd://HOST:PORT (env STORCTL_STORE)",
    ],
  });
}
