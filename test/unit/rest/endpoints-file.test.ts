import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readEndpoints, writeEndpoints } from '../../../src/lib/rest/endpoint.js';

describe("up's endpoints.json", () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-endpoints-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes made at once (two roles restarted together) all succeed and leave one whole file, 0600', async () => {
    const writes = Array.from({ length: 8 }, (_, i) =>
      writeEndpoints(dir, { store: 'etcd://127.0.0.1:2379', rest: `http://127.0.0.1:${8000 + i}` }),
    );
    await expect(Promise.all(writes)).resolves.toHaveLength(8);
    expect(readEndpoints(dir)?.rest).toMatch(/^http:\/\/127\.0\.0\.1:800\d$/);
    expect(statSync(join(dir, 'endpoints.json')).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['endpoints.json']);
  });

  it('a file this user may not read is said, with what to do, not taken for no cluster (which sent commands to the default port)', async () => {
    // Root reads every file: the reader runs as nobody, on a copy of the module (and the four it
    // imports, node built-ins only) in a directory nobody can read, so the repository's path does not matter.
    const dataDir = join(dir, 'up');
    mkdirSync(dataDir);
    await writeEndpoints(dataDir, { store: 'sqlite:/x/store.db', rest: 'http://127.0.0.1:4242' });
    const lib = fileURLToPath(new URL('../../../dist/lib/', import.meta.url));
    const copy = mkdtempSync(join(tmpdir(), 'storctl-endpoints-reader-'));
    try {
      for (const f of ['rest/endpoint.js', 'atomic-file.js', 'cluster-id.js', 'errors.js', 'paths.js'])
        cpSync(join(lib, f), join(copy, 'lib', f));
      writeFileSync(join(copy, 'package.json'), '{"type":"module"}');
      for (const d of [dir, dataDir, copy, join(copy, 'lib'), join(copy, 'lib', 'rest')]) chmodSync(d, 0o755);
      const script = `const { resolveRestUrl, commandCluster } = await import(${JSON.stringify(join(copy, 'lib/rest/endpoint.js'))});
        for (const f of [() => resolveRestUrl(undefined, ${JSON.stringify(dataDir)}), () => commandCluster({}, ${JSON.stringify(dataDir)})])
          try { console.log(JSON.stringify(f())); } catch (e) { console.log(e.code, e.message, e.suggestions.join(' | ')); }
        console.log(JSON.stringify(commandCluster({ store: 'sqlite:/y.db', clusterId: 'c' }, ${JSON.stringify(dataDir)})));`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        uid: 65534,
        gid: 65534,
        cwd: '/',
        encoding: 'utf8',
      });
      expect(r.stderr).toBe('');
      const [rest, cluster, named] = r.stdout.trim().split('\n');
      // Before: http://127.0.0.1:8081 and the data dir's default store, then "start a cluster with storctl up".
      expect(rest).toBe(
        `ENDPOINTS_UNREADABLE cannot read ${join(dataDir, 'endpoints.json')} (EACCES): it says where the cluster that \`storctl up\` runs in ${dataDir} serves run the command as the user that started \`storctl up\` | or name the cluster yourself: --rest URL and --store URL (or STORCTL_REST, STORCTL_STORE)`,
      );
      expect(cluster).toBe(rest);
      // Store and cluster id both named: the file is not needed, nor read.
      expect(JSON.parse(named)).toEqual({ storeUrl: 'sqlite:/y.db', clusterId: 'c' });
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
