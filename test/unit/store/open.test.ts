import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError, UsageError } from '../../../src/lib/errors.js';
import { openStore, parseStoreUrl } from '../../../src/lib/store/open.js';
import { DEAD_PORT } from '../../helpers/etcd.js';

const dir = mkdtempSync(join(tmpdir(), 'storctl-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseStoreUrl', () => {
  it('reads etcd endpoint lists, with https for etcd+https:// or TLS files', () => {
    expect(parseStoreUrl('etcd://h1:2379,10.0.0.2:2380')).toEqual({
      backend: 'etcd',
      hosts: ['http://h1:2379', 'http://10.0.0.2:2380'],
      secure: false,
    });
    expect(parseStoreUrl('etcd://h1')).toMatchObject({ hosts: ['http://h1:2379'] });
    expect(parseStoreUrl('etcd+https://h1:2379')).toMatchObject({ hosts: ['https://h1:2379'], secure: true });
    expect(parseStoreUrl('etcd://[::1]:2379', { tls: { ca: '/ca.pem' } })).toMatchObject({
      hosts: ['https://[::1]:2379'],
      secure: true,
    });
  });

  it('reads sqlite paths, relative or absolute', () => {
    expect(parseStoreUrl('sqlite:/var/lib/storctl/store.db')).toEqual({
      backend: 'embedded',
      path: '/var/lib/storctl/store.db',
    });
    expect(parseStoreUrl('sqlite:///abs/store.db')).toEqual({ backend: 'embedded', path: '/abs/store.db' });
    expect(parseStoreUrl('sqlite:data/store.db')).toEqual({ backend: 'embedded', path: 'data/store.db' });
  });

  it.each(['', 'mysql://h:1', 'etcd://', 'etcd://h:99999', 'etcd://h:2379,bad host', 'sqlite:', 'h1:2379'])(
    'rejects %j with a usage error showing a good URL',
    (url) => {
      let err: unknown;
      try {
        parseStoreUrl(url);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      expect((err as Error).message).toContain('etcd://127.0.0.1:2379');
      expect((err as Error).message).toContain('sqlite:/');
    },
  );
});

describe('openStore', () => {
  it('creates the sqlite parent directory 0700 and the file 0600', async () => {
    const path = join(dir, 'nested', 'state', 'store.db');
    const store = await openStore(`sqlite:${path}`);
    try {
      expect(store.backend).toBe('embedded');
      expect(store.endpoint).toBe(`sqlite:${path}`);
      expect(statSync(join(dir, 'nested', 'state')).mode & 0o777).toBe(0o700);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      await store.put('k', 'v');
      expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
    } finally {
      await store.close();
    }
  });

  it('fails fast with StoreUnavailableError naming the endpoint when etcd is not there', async () => {
    const port = DEAD_PORT;
    // A refused connection ends the connect check (its retry budget is 0.5 s), not the connect
    // timeout: with that timeout at 30 s, half of it is a bound a 10x slower machine still meets.
    const t0 = Date.now();
    const err = await openStore(`etcd://127.0.0.1:${port}`, { connectTimeoutMs: 30_000 }).catch((e) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err.message).toContain(`etcd://127.0.0.1:${port}`);
    expect(err.exitCode).toBe(5);
    expect(err.suggestions.join(' ')).toContain('check that etcd is running');
    expect(Date.now() - t0).toBeLessThan(15_000);
  });

  it('says so when the endpoint is a gRPC server but not etcd', async () => {
    const server = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    try {
      const err = await openStore(`etcd://127.0.0.1:${port}`).catch((e) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err.message).toContain('is it etcd?');
    } finally {
      server.forceShutdown();
    }
  });

  it('reports an unreadable TLS file as a usage error', async () => {
    const err = await openStore('etcd://127.0.0.1:2379', { tls: { ca: join(dir, 'missing-ca.pem') } }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toContain('missing-ca.pem');
  });

  it('reports a directory that cannot be created as StoreUnavailableError (no hang under /proc)', async () => {
    const err = await openStore('sqlite:/proc/storctl-no-such-dir/store.db').catch((e) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err.message).toContain('/proc/storctl-no-such-dir');
    expect(err.suggestions.join(' ')).toContain('writable');
  });

  it('reports a file that is not a database as StoreUnavailableError', async () => {
    const path = join(dir, 'not-a-db');
    await import('node:fs').then((fs) =>
      fs.writeFileSync(path, 'this is not sqlite, just some text '.repeat(200)),
    );
    const err = await openStore(`sqlite:${path}`).catch((e) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(err.message).toContain(path);
  });
});
