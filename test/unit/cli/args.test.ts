import { describe, expect, it } from 'vitest';
import { parseLabelEdit, parseLabels, parseSelector } from '../../../src/lib/cli-args.js';
import { ExitCode, UsageError } from '../../../src/lib/errors.js';

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
