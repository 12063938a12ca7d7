import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { runStorctl } from '../../helpers/storctl.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('every command documents itself', async () => {
  const config = await Config.load(root);
  // storctl's own commands; those of oclif's plugins (help, autocomplete) document themselves.
  const commands = config.commands.filter((c) => !c.hidden && c.pluginName === config.name);

  it('finds the commands', () => {
    expect(commands.map((c) => c.id)).toEqual(
      expect.arrayContaining(['get:volumes', 'store:dump', 'store:load']),
    );
    expect(commands.map((c) => c.id)).not.toContain('autocomplete');
    expect(config.commands.map((c) => c.id)).toEqual(expect.arrayContaining(['help', 'autocomplete']));
  });

  it.each(commands.map((c) => [c.id, c] as const))(
    '%s has a description, an example and the global flags',
    (_id, c) => {
      expect(c.description?.length ?? 0).toBeGreaterThan(10);
      expect(c.examples?.length ?? 0).toBeGreaterThan(0);
      for (const [flag, env] of [
        ['store', 'STORCTL_STORE'],
        ['cluster-id', 'STORCTL_CLUSTER_ID'],
        ['namespace', 'STORCTL_NAMESPACE'],
        ['output', 'STORCTL_OUTPUT'],
        ['log-level', 'STORCTL_LOG_LEVEL'],
      ]) {
        expect(c.flags[flag], `${c.id} --${flag}`).toBeDefined();
        expect((c.flags[flag] as { env?: string }).env).toBe(env);
      }
    },
  );

  it('root help has a description and examples', async () => {
    const r = await runStorctl(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('storage control plane');
    expect(r.stdout).toContain('EXAMPLES');
    expect(r.stdout).toContain('$ storctl get volumes');
  });

  it('a command help shows its examples, and bad flags exit 2', async () => {
    const r = await runStorctl(['get', 'volumes', '--help']);
    expect(r.stdout).toContain('EXAMPLES');
    const bad = await runStorctl(['get', 'volumes', '--no-such-flag']);
    expect(bad.code).toBe(2);
    const badOutput = await runStorctl(['get', 'volumes', '-o', 'xml']);
    expect(badOutput.code).toBe(2);
    expect(badOutput.stderr).toMatch(
      /Expected --output=xml to be one of: table, wide, json, yaml, jsonpath=TEMPLATE, custom-columns=SPEC/,
    );
  });

  it('the global flags fall back to STORCTL_* environment variables', async () => {
    const r = await runStorctl(['get', 'volumes'], { env: { STORCTL_STORE: 'etcd://127.0.0.1:1' } });
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('store etcd://127.0.0.1:1 is unreachable');
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace without --log-level debug
    // Only the error: a note that the listing shows the store alone would be about a listing never made.
    expect(r.stderr).not.toContain('note:');
    const debug = await runStorctl(['get', 'volumes', '--log-level', 'debug'], {
      env: { STORCTL_STORE: 'etcd://127.0.0.1:1' },
    });
    expect(debug.code).toBe(5);
    expect(debug.stderr).toMatch(/\n\s+at /);
  });

  it('a command that reads an embedded store that is not there says so and makes none', async () => {
    const home = mkdtempSync(join(tmpdir(), 'storctl-nostore-'));
    try {
      const file = join(home, 'missing', 'store.db');
      for (const args of [
        ['get', 'volumes'],
        ['events'],
        ['doctor', 'store'],
        ['store', 'dump'],
        ['orphans'],
      ]) {
        const r = await runStorctl(args, { env: { STORCTL_STORE: `sqlite:${file}` } });
        expect(r.code, args.join(' ')).toBe(5);
        expect(r.stderr).toContain(`store sqlite:${file} is unreachable: there is no store file ${file}`);
        expect(r.stderr).toContain('Try: start a cluster with `storctl up`');
        expect(r.stderr, args.join(' ')).not.toContain('note:');
      }
      expect(existsSync(join(home, 'missing'))).toBe(false);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
