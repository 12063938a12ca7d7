import { describe, expect, it } from 'vitest';
import { humanizeBytes, parseBytes } from '../../../src/lib/output/humanize.js';
import { type Listing, render } from '../../../src/lib/output/render.js';

describe('sizes', () => {
  it('humanizes like kubectl-mayastor', () => {
    expect(humanizeBytes(0)).toBe('0 B');
    expect(humanizeBytes(512)).toBe('512 B');
    expect(humanizeBytes(1024 ** 3)).toBe('1GiB');
    expect(humanizeBytes(5368709120)).toBe('5GiB');
    expect(humanizeBytes(1.5 * 1024 ** 2)).toBe('1.5MiB');
    expect(humanizeBytes(null)).toBe('<none>');
  });
  it('parses sizes and refuses garbage', () => {
    expect(parseBytes('10GiB')).toBe(10 * 1024 ** 3);
    expect(parseBytes('512M')).toBe(512e6);
    expect(parseBytes('1G')).toBe(1e9);
    expect(parseBytes('1Gi')).toBe(2 ** 30);
    expect(parseBytes('1.5Gi')).toBe(1.5 * 2 ** 30);
    expect(parseBytes('4k')).toBe(4000);
    expect(parseBytes('4Ki')).toBe(4096);
    // Not Kubernetes quantities: ambiguous or malformed sizes are refused, not guessed.
    for (const bad of ['1GB', '1 GB', '1 Gi', '1g', '4K', '0.1', '1.5', 'Gi', '1e9', ''])
      expect(parseBytes(bad), bad).toBeNull();
    expect(parseBytes('4096')).toBe(4096);
    expect(parseBytes('ten')).toBeNull();
    expect(parseBytes('-1G')).toBeNull();
  });
});

describe('render', () => {
  const listing: Listing<{ id: string; size: number; node: string | null }> = {
    rows: [
      { id: 'a', size: 1024, node: null },
      { id: 'bb', size: 0, node: 'n1' },
    ],
    columns: [
      { header: 'ID', get: (r) => r.id },
      { header: 'NODE', get: (r) => r.node },
      { header: 'SIZE', get: (r) => humanizeBytes(r.size), wide: true },
    ],
  };
  it('prints a borderless table with <none> for missing values, wide adds columns', () => {
    const table = render(listing, 'table');
    expect(table.split('\n').map((l) => l.trim().split(/\s+/))).toEqual([
      ['ID', 'NODE'],
      ['a', '<none>'],
      ['bb', 'n1'],
    ]);
    expect(render(listing, 'wide').split('\n')[0].trim().split(/\s+/)).toEqual(['ID', 'NODE', 'SIZE']);
  });
  it('prints full objects as json and yaml', () => {
    expect(JSON.parse(render(listing, 'json'))).toEqual(listing.rows);
    expect(render({ ...listing, single: true }, 'yaml')).toContain('id: a');
  });
});

describe('json', () => {
  it('keeps u64 values beyond 2^53 exact', async () => {
    const { prettyJson } = await import('../../../src/lib/output/render.js');
    expect(prettyJson({ reservationKey: 10075049441338057178n, a: 'x' })).toBe(
      '{\n  "reservationKey": 10075049441338057178,\n  "a": "x"\n}',
    );
  });
});
