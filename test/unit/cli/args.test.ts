import { Parser } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import {
  durationArg,
  durationFlag,
  formatDuration,
  parseDuration,
  parseLabelEdit,
  parseLabels,
  parseSelector,
} from '../../../src/lib/cli-args.js';
import {
  ExitCode,
  ServiceUnavailableError,
  StoreUnavailableError,
  UsageError,
} from '../../../src/lib/errors.js';

/** The UsageError `fn` throws (the test fails when it throws nothing or something else). */
function usageError(fn: () => unknown): UsageError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(ExitCode.usage);
    return err as UsageError;
  }
  throw new Error('expected a UsageError');
}

describe('durations', () => {
  it('parses every unit, fractions, and a bare number as seconds', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('0.25ms')).toBe(0);
    expect(parseDuration('300')).toBe(300_000);
    expect(parseDuration(' 10s ')).toBe(10_000);
    expect(parseDuration('0')).toBe(0);
  });

  it('refuses what is not a duration', () => {
    for (const bad of [
      '',
      's',
      'soon',
      '10 s',
      '10sec',
      '1d',
      '-5s',
      '+5s',
      '1e3',
      '.5s',
      '5s5',
      '10S',
      '1,5s',
    ])
      expect(parseDuration(bad), bad).toBeUndefined();
  });

  it('formats milliseconds as the shortest exact duration', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(500)).toBe('500ms');
    expect(formatDuration(1500)).toBe('1500ms');
    expect(formatDuration(15_000)).toBe('15s');
    expect(formatDuration(60_000)).toBe('1m');
    expect(formatDuration(90_000)).toBe('90s');
    expect(formatDuration(300_000)).toBe('5m');
    expect(formatDuration(7_200_000)).toBe('2h');
    for (const ms of [0, 1, 999, 1000, 61_000, 3_660_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });

  it('a bad value is a usage error naming the flag, quoting the input and showing valid ones', () => {
    expect(durationArg('node-deadline', '30s')).toBe(30_000);
    expect(usageError(() => durationArg('node-deadline', 'soon')).message).toBe(
      "--node-deadline 'soon' is not a duration (e.g. 500ms, 10s, 2m)",
    );
    expect(durationArg('mount-timeout', '0')).toBe(0);
    expect(usageError(() => durationArg('mount-timeout', '0ms', { positive: true })).message).toBe(
      "--mount-timeout '0ms' must be longer than 0 (e.g. 500ms, 10s, 2m)",
    );
  });

  describe('durationFlag through oclif’s parser', () => {
    const flags = {
      timeout: durationFlag({
        description: 'how long to wait',
        default: 300_000,
        env: 'TEST_STORCTL_TIMEOUT',
      }),
      deadline: durationFlag({ description: 'a deadline', positive: true }),
    };
    const parse = (argv: string[]) => Parser.parse(argv, { flags });

    it('gives milliseconds, the default when absent, undefined without a default', async () => {
      expect((await parse(['--timeout', '90s', '--deadline', '250ms'])).flags).toMatchObject({
        timeout: 90_000,
        deadline: 250,
      });
      expect((await parse(['--timeout=2m'])).flags.timeout).toBe(120_000);
      expect((await parse(['--timeout', '45'])).flags.timeout).toBe(45_000);
      const none = await parse([]);
      expect(none.flags.timeout).toBe(300_000);
      expect(none.flags.deadline).toBeUndefined();
    });

    it('reads its environment variable through the same parser', async () => {
      process.env.TEST_STORCTL_TIMEOUT = '5s';
      try {
        expect((await parse([])).flags.timeout).toBe(5000);
        process.env.TEST_STORCTL_TIMEOUT = 'later';
        await expect(parse([])).rejects.toThrow("--timeout 'later' is not a duration");
      } finally {
        delete process.env.TEST_STORCTL_TIMEOUT;
      }
    });

    it('a bad value fails parsing with a UsageError (exit code 2) that names the flag', async () => {
      const err = await parse(['--deadline', '0']).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).exitCode).toBe(ExitCode.usage);
      expect((err as UsageError).message).toContain("--deadline '0' must be longer than 0");
      await expect(parse(['--timeout', 'forever'])).rejects.toThrow(
        "--timeout 'forever' is not a duration (e.g. 500ms, 10s, 2m)",
      );
    });

    it('help shows the default as a duration, and the manifest holds no milliseconds', () => {
      expect(flags.timeout.description).toBe('how long to wait (default 5m)');
      expect(flags.timeout.noCacheDefault).toBe(true);
      expect(flags.deadline.description).toBe('a deadline');
    });
  });
});

describe('labels', () => {
  it('KEY=VALUE sets, splitting at the first =', () => {
    expect(parseLabelEdit('zone=a')).toEqual({ op: 'set', key: 'zone', value: 'a' });
    expect(parseLabelEdit('topology.kubernetes.io/zone=eu-1')).toEqual({
      op: 'set',
      key: 'topology.kubernetes.io/zone',
      value: 'eu-1',
    });
    expect(parseLabelEdit('k=')).toEqual({ op: 'set', key: 'k', value: '' });
    expect(parseLabelEdit('k=a=b')).toEqual({ op: 'set', key: 'k', value: 'a=b' });
    expect(parseLabelEdit('k=v-')).toEqual({ op: 'set', key: 'k', value: 'v-' });
    expect(parseLabelEdit('k-=v')).toEqual({ op: 'set', key: 'k-', value: 'v' });
  });

  it('KEY- removes', () => {
    expect(parseLabelEdit('zone-')).toEqual({ op: 'remove', key: 'zone' });
    expect(parseLabelEdit('openebs.io/class-')).toEqual({ op: 'remove', key: 'openebs.io/class' });
    expect(parseLabelEdit('a--')).toEqual({ op: 'remove', key: 'a-' });
  });

  it('anything else is a usage error quoting the input', () => {
    for (const bad of ['zone', '-', '', '=a', '=', '=-'])
      expect(usageError(() => parseLabelEdit(bad)).message).toBe(
        `label '${bad}' is neither KEY=VALUE nor KEY-`,
      );
  });

  it('repeated --label KEY=VALUE flags become a map; none given stays undefined', () => {
    expect(parseLabels(undefined)).toBeUndefined();
    expect(parseLabels([])).toEqual({});
    expect(parseLabels(['zone=a', 'class=ssd', 'zone=b', 'empty='])).toEqual({
      zone: 'b',
      class: 'ssd',
      empty: '',
    });
  });

  it('a --label that is not KEY=VALUE (a removal included) names the flag', () => {
    expect(usageError(() => parseLabels(['zone=a', 'zone-'])).message).toBe(
      "--label 'zone-' is not KEY=VALUE",
    );
    expect(usageError(() => parseLabels(['=a'])).message).toBe("--label '=a' is not KEY=VALUE");
    expect(usageError(() => parseLabels(['ssd'], 'pool-label')).message).toBe(
      "--pool-label 'ssd' is not KEY=VALUE",
    );
  });

  it('selectors: k=v[,k=v] by kubectl-mayastor rules', () => {
    expect(parseSelector(undefined)).toBeUndefined();
    expect(parseSelector('openebs.io/created-by=operator-diskpool,zone=a')).toEqual({
      'openebs.io/created-by': 'operator-diskpool',
      zone: 'a',
    });
    for (const bad of ['zone', 'zone=', 'a=b=c', '-a=b', 'a/b/c=d', `k=${'x'.repeat(64)}`]) {
      const err = usageError(() => parseSelector(bad));
      expect(err.message).toContain(`invalid selector '${bad}'`);
      expect(err.suggestions[0]).toContain('--selector');
    }
  });
});

describe('unreachable errors', () => {
  it('never read "unreachable: null" when the client library gives no detail', () => {
    expect(new StoreUnavailableError('etcd://127.0.0.1:2379', 'null').message).toBe(
      'store etcd://127.0.0.1:2379 is unreachable: no answer (connection refused, reset or timed out)',
    );
    expect(new ServiceUnavailableError('core REST API', 'http://127.0.0.1:1', '').message).toContain(
      'is unreachable: no answer',
    );
    expect(new ServiceUnavailableError('core REST API', 'http://127.0.0.1:1', 'ECONNREFUSED').message).toBe(
      'core REST API at http://127.0.0.1:1 is unreachable: ECONNREFUSED',
    );
  });
});
