import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { runStorctl } from '../../helpers/storctl.js';

/** Mistyped commands and flags: exit 2 (usage), a short answer with the closest match, no usage dump. */
describe('typos through the built CLI', () => {
  it.each([
    [['get', 'volumez'], "Error: 'get volumez' is not a storctl command", 'Did you mean: storctl get volume'],
    [
      ['volum', 'create'],
      "Error: 'volum create' is not a storctl command",
      'Did you mean: storctl volume create?',
    ],
    [['frobnicate'], "Error: 'frobnicate' is not a storctl command", 'Try: storctl --help'],
  ])('%j is an unknown command: exit 2 and the closest command', async (args, first, second) => {
    const r = await runStorctl(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n').filter(Boolean)).toEqual([first, expect.stringContaining(second)]);
  });

  it.each([
    [['get', 'volumes', '--outptu', 'json'], '--output', 'storctl get volumes --help'],
    [['volume', 'create', '--size', '1Gi', '--replica', '2'], '--replicas', 'storctl volume create --help'],
  ])('%j has a mistyped flag: three lines, the closest flag, exit 2', async (args, near, help) => {
    const r = await runStorctl(args);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n').filter(Boolean)).toEqual([
      `Error: Nonexistent flag: ${args.find((a) => a.startsWith('--') && a !== '--size')}`,
      `Did you mean ${near}?`,
      `Try: ${help}`,
    ]);
  });

  it.each([[['volume', 'resize', '00000000-0000-4000-8000-000000000000', '20GiB'], '--size 20GiB']])(
    '%j gives as an argument what its one required flag takes: exit 2, the flag named',
    async (args, fix) => {
      const r = await runStorctl(args);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n').filter(Boolean)).toEqual([
        `Error: Unexpected argument: ${args.at(-1)}`,
        `Did you mean ${fix}?`,
        `Try: storctl ${args.slice(0, 2).join(' ')} --help`,
      ]);
    },
  );

  it.each([
    [['snapshot', 'delete'], 'Missing 1 required arg: ID (snapshot uuid)'],
    // pool create has one required flag too: no "Did you mean --capacity …" built from the missing arg.
    [['pool', 'create', 'node-1'], 'Missing 1 required arg: ID (pool id)'],
  ])('%j misses an argument: exit 2, the argument named', async (args, missing) => {
    const r = await runStorctl(args);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n').filter(Boolean)).toEqual([
      `Error: ${missing}`,
      `Try: storctl ${args.slice(0, 2).join(' ')} --help`,
    ]);
  });

  it('with -o json an error is one JSON object on stderr, with the exit code of its kind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'storctl-json-error-'));
    try {
      const storeUrl = `sqlite:${join(dir, 'store.db')}`;
      await (await openStore(storeUrl)).close(); // an empty store: the volume is not found in it
      const r = await runStorctl(['get', 'volume', '00000000-0000-4000-8000-000000000000', '-o', 'json'], {
        env: { STORCTL_STORE: storeUrl },
      });
      expect(r.code).toBe(3);
      expect(r.stdout).toBe('');
      expect(JSON.parse(r.stderr)).toEqual({
        error: {
          code: 'VOLUME_NOT_FOUND',
          message: "volume '00000000-0000-4000-8000-000000000000' not found",
          next: ['storctl get volumes'],
        },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('one object that is stored but does not decode is reported as such (exit 8), not as not found', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'storctl-undecodable-one-'));
    try {
      const storeUrl = `sqlite:${join(dir, 'store.db')}`;
      const space = { clusterId: 'undecodable-one', namespace: 'default' };
      const id = '00000000-0000-4000-8000-000000000001';
      const store = await openStore(storeUrl);
      await store.put(objectKey(space, 'VolumeSpec', id), JSON.stringify({ uuid: id, size: 'big' }));
      await store.put(objectKey(space, 'PoolSpec', 'pool-1'), '{"id":7}');
      await store.close();
      const env = { STORCTL_STORE: storeUrl, STORCTL_CLUSTER_ID: space.clusterId };
      for (const args of [
        ['get', 'volume', id],
        ['get', 'volumes', id],
        ['describe', 'volume', id],
        ['get', 'volume-replica-topology', id],
        ['get', 'pool', 'pool-1'],
        ['describe', 'pool', 'pool-1'],
      ]) {
        const r = await runStorctl(args, { env });
        expect(r.code, args.join(' ')).toBe(8);
        expect(r.stderr, args.join(' ')).toMatch(
          /^Error: cannot decode \/openebs\.io\/.*(VolumeSpec|PoolSpec)\//,
        );
        expect(r.stderr, args.join(' ')).toContain('Try: storctl doctor store');
        expect(r.stderr, args.join(' ')).not.toContain('not found');
      }
      const json = await runStorctl(['get', 'volume', id, '-o', 'json'], { env });
      expect(JSON.parse(json.stderr).error.code).toBe('DECODE_FAILED');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
