import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { runStorctl } from '../../helpers/storctl.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
/** A loopback port nothing listens on: core is unreachable there, at once. */
const NO_CORE = 'http://127.0.0.1:1';
const VOLUME = '4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b';

/**
 * The shared flag and argument parsers as a user meets them through the built CLI: a bad duration
 * or label is refused with exit code 2 and one line naming it, before anything is contacted.
 */
describe('durations, labels and --rest through the built CLI', () => {
  it.each([
    [
      ['daemon', 'core', '--node-deadline', 'soon'],
      "--node-deadline 'soon' is not a duration (e.g. 500ms, 10s, 2m)",
    ],
    [
      ['node', 'drain', 'node-1', '--wait', '--timeout', '5x'],
      "--timeout '5x' is not a duration (e.g. 500ms, 10s, 2m)",
    ],
    [
      ['volume', 'scale', VOLUME, '--replicas', '2', '--timeout', 'later'],
      "--timeout 'later' is not a duration",
    ],
    [
      [
        'daemon',
        'mounter',
        '--endpoint',
        'unix:///nonexistent/csi.sock',
        '--node-id',
        'n',
        '--mount-timeout',
        '0',
      ],
      "--mount-timeout '0' must be longer than 0 (e.g. 500ms, 10s, 2m)",
    ],
    [['node', 'label', 'node-1', 'zone'], "label 'zone' is neither KEY=VALUE nor KEY-"],
    [['node', 'label', 'node-1', '=-'], "label '=-' is neither KEY=VALUE nor KEY-"],
    [['pool', 'label', 'pool-1', '=a'], "label '=a' is neither KEY=VALUE nor KEY-"],
    // A cordon or drain label as kubectl-mayastor's positional or as --label, not two different ones.
    [
      ['node', 'cordon', 'node-1', 'a', '--label', 'b'],
      "label given twice, as 'a' and as --label 'b': give it once",
    ],
    [['node', 'drain', 'node-1', 'x', '--label', 'y'], "label given twice, as 'x' and as --label 'y'"],
    [['node', 'uncordon', 'node-1', '--label', ''], 'the label must not be empty'],
    [
      ['volume', 'scale', VOLUME, '2', '--replicas', '3'],
      'replica count given twice, as 2 and as --replicas 3: give it once',
    ],
    [['volume', 'scale', VOLUME], 'give the new replica count'],
    // oclif's own integer parsing, said the same way (one line, exit 2), naming the flag.
    [
      ['volume', 'create', '--size', '1Gi', '--replicas', '0'],
      '--replicas: Expected an integer greater than or equal to 1 but received: 0',
    ],
    [['volume', 'scale', VOLUME, '0'], 'Expected an integer greater than or equal to 1 but received: 0'],
    [['volume', 'create', '--size', '1GiB', '--label', 'zone-'], "--label 'zone-' is not KEY=VALUE"],
    [
      ['pool', 'create', 'node-1', 'p', '--capacity', '1GiB', '--label', 'ssd'],
      "--label 'ssd' is not KEY=VALUE",
    ],
    // Sizes are Kubernetes quantities: 1G is 10^9, 1Gi 2^30; an ambiguous unit is refused.
    [
      ['volume', 'create', '--size', '1GB'],
      "--size '1GB' is not a size: use bytes (1073741824), or a Kubernetes quantity",
    ],
    [['volume', 'create', '--size', '1 Gi'], "--size '1 Gi' is not a size"],
    [['volume', 'create', '--size', '0'], "--size '0' must be more than 0 bytes (e.g. 1Gi)"],
    [['volume', 'create'], '--size is required (or --from-snapshot, to restore a snapshot)'],
    [['volume', 'create', '--from-snapshot', 'snap-1'], "snapshot id 'snap-1' is not a uuid"],
    // A volume id that cannot be one is refused as such, not looked up (nor sent to core).
    [['get', 'volume', 'vol-1'], "volume id 'vol-1' is not a uuid"],
    [['get', 'volumes', 'vol-1'], "volume id 'vol-1' is not a uuid"],
    [['get', 'volume-replica-topology', 'vol-1'], "volume id 'vol-1' is not a uuid"],
    [['describe', 'volume', 'vol-1'], "volume id 'vol-1' is not a uuid"],
    [['get', 'snapshots', '--volume', 'vol-1'], "--volume 'vol-1' is not a uuid"],
    [['volume', 'create', '--size', '0Gi'], "--size '0Gi' must be more than 0 bytes"],
    [['pool', 'create', 'node-1', 'p', '--capacity', '64m'], "--capacity '64m' is not a size"],
  ])('%j: exit 2, one line naming the value', async (args, message) => {
    const r = await runStorctl(args, { env: { STORCTL_REST: NO_CORE } });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`Error: ${message}`);
    expect(r.stderr).not.toContain('Parsing --'); // oclif's wrapper around a flag's own error is taken off
    expect(r.stderr).not.toContain('unreachable'); // refused before core was contacted
  });

  it('a duration flag reads its environment variable through the same parser', async () => {
    const r = await runStorctl(
      ['daemon', 'mounter', '--endpoint', 'unix:///nonexistent/csi.sock', '--node-id', 'n'],
      {
        env: { STORCTL_MOUNT_TIMEOUT: 'abc' },
      },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Error: --mount-timeout 'abc' is not a duration (e.g. 500ms, 10s, 2m)");
  });

  it('every command that calls core takes --rest (env STORCTL_REST) and reports where core is not', async () => {
    const config = await Config.load(root);
    const restCommands = config.commands.filter(
      (c) => c.flags.rest && !c.id.startsWith('daemon:') && c.id !== 'up',
    );
    expect(restCommands.map((c) => c.id).sort()).toEqual(
      expect.arrayContaining([
        'get:block-devices',
        'node:label',
        'pool:label',
        'snapshot:create',
        'volume:create',
      ]),
    );
    expect(restCommands.length).toBe(22);
    for (const c of restCommands) expect((c.flags.rest as { env?: string }).env, c.id).toBe('STORCTL_REST');

    const byFlag = await runStorctl(['volume', 'delete', VOLUME, '--rest', NO_CORE]);
    expect(byFlag.code).toBe(6);
    expect(byFlag.stderr).toContain(`core REST API at ${NO_CORE} is unreachable`);
    const byEnv = await runStorctl(['node', 'label', 'node-1', 'zone=a'], { env: { STORCTL_REST: NO_CORE } });
    expect(byEnv.code).toBe(6);
    expect(byEnv.stderr).toContain(`core REST API at ${NO_CORE} is unreachable`);
  });
});
