import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { runStorctl } from '../../helpers/storctl.js';
import { TestCluster } from '../../integration/core/cluster.js';

/**
 * A cluster storctl made can be read and backed up: volume create + publish (with a frontend node)
 * + snapshot through the CLI, then `get snapshots`, `get volumes` and `store dump` → `store load`
 * into an empty store, whose `get` output equals the original's.
 */
describe('what storctl writes, storctl reads and restores (built CLI)', () => {
  let c: TestCluster;
  let dir: string;
  const volume = randomUUID();
  const snapshot = randomUUID();
  const cli = (args: string[], env: NodeJS.ProcessEnv = c.env) => runStorctl(args, { env });
  const ok = async (args: string[], env?: NodeJS.ProcessEnv) => {
    const r = await cli(args, env);
    expect(r.stderr, `storctl ${args.join(' ')}`).toBe('');
    expect(r.code, `storctl ${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r.stdout;
  };

  beforeAll(async () => {
    c = await TestCluster.start();
    dir = mkdtempSync(join(tmpdir(), 'storctl-backup-'));
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads back a published volume with a snapshot, and restores its dump into an empty store', async () => {
    await ok(['volume', 'create', volume, '--size', '16MiB', '--replicas', '2', '--thin']);
    await ok(['volume', 'publish', volume, '--node', 'node-1', '--frontend-node', 'worker-1']);
    await ok(['snapshot', 'create', volume, snapshot]);

    const snaps = JSON.parse(await ok(['get', 'snapshots', '-o', 'json']));
    expect(JSON.stringify(snaps)).toContain(snapshot);
    const volumes = await ok(['get', 'volumes', '-o', 'json']);
    expect(volumes).toContain('nqn.2019-05.io.openebs:node-name:worker-1');

    const dump = await ok(['store', 'dump']);
    const file = join(dir, 'backup.jsonl');
    writeFileSync(file, dump);
    // Compared as each store alone shows them: core, which serves the original, is left out.
    const storeOnly = { ...c.env, STORCTL_REST: '' };
    const fresh = { ...storeOnly, STORCTL_STORE: `sqlite:${join(dir, 'restored.db')}` };
    const loaded = await cli(['store', 'load', file], fresh);
    expect(loaded.code, loaded.stderr).toBe(0);
    for (const what of ['volumes', 'snapshots', 'replicas', 'nexuses', 'pools'])
      expect(await ok(['get', what, '-o', 'json'], fresh), `get ${what}`).toBe(
        await ok(['get', what, '-o', 'json'], storeOnly),
      );

    // -o json and -o yaml hold the same records; the JSON array loads like the JSON lines.
    const records = dump
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const asJson = await ok(['store', 'dump', '-o', 'json']);
    expect(JSON.parse(asJson)).toEqual(records);
    expect(parseYaml(await ok(['store', 'dump', '-o', 'yaml']))).toEqual(records);
    const arrayFile = join(dir, 'backup.json');
    writeFileSync(arrayFile, asJson);
    const other = { ...storeOnly, STORCTL_STORE: `sqlite:${join(dir, 'restored-from-array.db')}` };
    const fromArray = await cli(['store', 'load', arrayFile], other);
    expect(fromArray.code, fromArray.stderr).toBe(0);
    expect(await ok(['get', 'volumes', '-o', 'json'], other)).toBe(
      await ok(['get', 'volumes', '-o', 'json'], storeOnly),
    );
  }, 120_000);
});
