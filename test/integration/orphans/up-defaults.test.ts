import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';

/**
 * Flagless, as on a machine `storctl up` set up: the csi-node state dir defaults to the data dir's,
 * and its leftovers are removed below the root up gave its csi-node (endpoints.json `csiNodeRoot`),
 * not below /var/lib/kubelet. The data dir is laid out as `up` leaves it (its files written here).
 */
describe('storctl orphans defaults on an `up` machine', () => {
  const home = mkdtempSync(join(tmpdir(), 'storctl-orphans-up-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("finds the csi-node state in up's data dir and cleans below up's csi-node root", async () => {
    const data = join(home, 'storctl');
    const root = join(data, 'kubelet');
    const state = join(data, 'csi-node');
    const volumeId = crypto.randomUUID();
    const staging = join(root, 'plugins', volumeId, 'globalmount');
    mkdirSync(staging, { recursive: true });
    mkdirSync(state, { recursive: true });
    await (await openStore(`sqlite:${join(data, 'store.db')}`)).close();
    writeFileSync(
      join(data, 'endpoints.json'),
      JSON.stringify({
        rest: 'http://127.0.0.1:1',
        store: `sqlite:${join(data, 'store.db')}`,
        csiNodeRoot: root,
      }),
    );
    writeFileSync(
      join(state, 'state.json'),
      JSON.stringify({
        version: 1,
        volumes: { [volumeId]: { volumeId, stagingPath: staging, publishes: {}, stagedAt: 't' } },
      }),
    );
    const env = {
      XDG_DATA_HOME: home,
      STORCTL_STORE: undefined,
      STORCTL_REST: undefined,
      STORCTL_DATA_DIR: undefined,
      STORCTL_CSI_NODE_STATE_DIR: undefined,
      STORCTL_CLUSTER_ID: 'up-defaults',
    };
    const listed = await runStorctl(['orphans', '-o', 'json'], { env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(
      (JSON.parse(listed.stdout) as { kind: string; id: string }[]).map((o) => `${o.kind} ${o.id}`),
    ).toEqual([`csi-node-volume ${volumeId}`]);
    const deleted = await runStorctl(['orphans', '--delete', '-y'], { env });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(existsSync(staging)).toBe(false);
    expect(JSON.parse(readFileSync(join(state, 'state.json'), 'utf8')).volumes).toEqual({});
  });
});
