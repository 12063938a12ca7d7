import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';
import { checkStoreReadable } from '../../helpers/store-check.js';
import { CLUSTER_ID } from './engines.js';

describe('storctl daemon io-engine: flags and startup errors', () => {
  let dir: string;
  let busy: Server;
  let busyPort: number;
  const base = () => [
    'daemon',
    'io-engine',
    '--node',
    'n1',
    '--pool-dir',
    join(dir, 'pools'),
    '--store',
    `sqlite:${join(dir, 'store.db')}`,
    '--cluster-id',
    CLUSTER_ID,
  ];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-cmd-'));
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    busyPort = (busy.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise<void>((r) => busy.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  });

  it('rejects a malformed endpoint or node id with a usage error', async () => {
    const r = await runStorctl([...base(), '--grpc', 'nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--grpc 'nope' is not HOST:PORT/);
    const n = await runStorctl([
      'daemon',
      'io-engine',
      '--node',
      'a/b',
      '--pool-dir',
      dir,
      '--store',
      `sqlite:${join(dir, 'store.db')}`,
      '--cluster-id',
      CLUSTER_ID,
    ]);
    expect(n.code).toBe(2);
    expect(n.stderr).toMatch(/--node 'a\/b' is not a valid node id/);
  });

  it('names the busy address and the flag to change', async () => {
    const r = await runStorctl([...base(), '--grpc', '127.0.0.1:0', '--nbd', `127.0.0.1:${busyPort}`]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(new RegExp(`cannot serve NBD on 127.0.0.1:${busyPort}: address already in use`));
    expect(r.stderr).toMatch(/Try: pass another --nbd/);
    const g = await runStorctl([...base(), '--grpc', `127.0.0.1:${busyPort}`, '--nbd', '127.0.0.1:0']);
    expect(g.code).toBe(4);
    expect(g.stderr).toMatch(/cannot serve gRPC/);
  });

  it('an io-engine that refused to start wrote nothing: the store is empty and reads back', async () => {
    const store = await openStore(`sqlite:${join(dir, 'store.db')}`);
    try {
      expect((await store.range('/')).kvs).toEqual([]);
    } finally {
      await store.close();
    }
    expect(
      await checkStoreReadable(`sqlite:${join(dir, 'store.db')}`, {
        clusterId: CLUSTER_ID,
        namespace: 'default',
      }),
    ).toBe(0);
  });
});
