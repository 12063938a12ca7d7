import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';
import { seed, smallCluster, space, volumeId, volumeRecords } from '../../unit/dashboard/fixture.js';
import { DashboardPty } from './pty.js';

describe('storctl dashboard in a pseudo-terminal (embedded store)', () => {
  let dir: string;
  let storeUrl: string;
  const args = () => [
    '--store',
    storeUrl,
    '--cluster-id',
    space.clusterId,
    '--state-dir',
    join(dir, 'mounter'),
  ];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-dash-e2e-'));
    storeUrl = `sqlite:${join(dir, 'store.db')}`;
    const store = await openStore(storeUrl);
    try {
      await seed(store, smallCluster());
    } finally {
      await store.close();
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('shows the volumes, follows a write from another process, and exits 0 on q', async () => {
    const pty = new DashboardPty(args());
    try {
      await pty.waitForText(volumeId(3));
      expect(pty.screen).toContain('nodes 3/3 online');
      // A write by another process (the embedded store's watch follows other writers too).
      const store = await openStore(storeUrl);
      try {
        await seed(store, volumeRecords(9, { node: 'node-1' }));
      } finally {
        await store.close();
      }
      await pty.waitForText(volumeId(9));
      expect(await pty.quit()).toBe(0);
    } finally {
      pty.kill();
    }
  });

  it('refuses without a terminal: exit 2, naming storctl get volumes -o json', async () => {
    const r = await runStorctl(['dashboard', ...args()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('storctl get volumes -o json');
    expect(r.stdout).toBe('');
    const json = await runStorctl(['dashboard', ...args(), '-o', 'json']);
    expect(json.code).toBe(2);
    expect(json.stderr).toContain('storctl get volumes -o json');
  });
});
