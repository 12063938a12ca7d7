import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultClusterId } from '../../../src/lib/cluster-id.js';
import { commandCluster } from '../../../src/lib/rest/endpoint.js';

/** Which store and cluster id a command reads, from its flags, the data dir's `up`, or the defaults. */
describe('commandCluster', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-command-cluster-'));
  const upDir = join(dir, 'up');
  const bare = join(dir, 'bare');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ETCD = 'etcd://127.0.0.1:2379';
  mkdirSync(upDir);
  writeFileSync(
    join(upDir, 'endpoints.json'),
    JSON.stringify({ store: ETCD, clusterId: 'c1', namespace: 'default' }),
  );

  it("follows the store and cluster id of the data dir's up", () => {
    expect(commandCluster({}, upDir)).toEqual({ storeUrl: ETCD, clusterId: 'c1' });
  });

  it("takes up's cluster id with up's store only: another store has its own key space", () => {
    expect(commandCluster({ store: ETCD }, upDir)).toEqual({ storeUrl: ETCD, clusterId: 'c1' });
    expect(commandCluster({ store: 'sqlite:/elsewhere.db' }, upDir)).toEqual({
      storeUrl: 'sqlite:/elsewhere.db',
      clusterId: defaultClusterId(),
    });
    expect(commandCluster({ clusterId: 'c2' }, upDir)).toEqual({ storeUrl: ETCD, clusterId: 'c2' });
  });

  it('without an up, the embedded store of the data dir and this machine', () => {
    expect(commandCluster({}, bare)).toEqual({
      storeUrl: `sqlite:${join(bare, 'store.db')}`,
      clusterId: defaultClusterId(),
    });
  });
});
