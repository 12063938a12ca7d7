import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { toYaml } from '../../../src/lib/output/yaml.js';
import { fixtures } from '../specs/fixtures.js';

/** What a YAML reader gets back (bigints arrive as numbers; their digits are checked as text). */
const readBack = (text: string) => parse(text);
const asRead = (v: unknown): unknown =>
  JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x)) ?? 'null');

const tricky: unknown[] = [
  { a: 'yes', b: 'No', c: 'null', d: '~', e: 'true', f: 'on', g: 'Y', h: '' },
  {
    numbers: ['1', '0x1f', '1e3', '1E3', '.inf', '-.5', '007', '1_000', '+1', '0b101', '0o17', '1.5', '12.'],
    real: [1, -0.5, 1e21, 0],
  },
  { dates: ['2024-01-01', '2024-1-1', '2001-12-14t21:59:43.10-05:00', '2024-01-01T00:00:00Z'] },
  {
    ids: [
      '7a9c3e21-2222-4c1d-8e55-0f1e2d3c4b5a',
      '00005b8c-bcea-4c76-aa57-c3b22f8a50ff',
      '12e',
      '1.2.3',
      'node-1',
    ],
  },
  {
    punct: [
      'a: b',
      'a:',
      '#x',
      'x #y',
      '- a',
      '[a]',
      '{a}',
      '*a',
      '&a',
      '!a',
      '|',
      '>',
      '%a',
      '@a',
      '`a',
      "'a'",
      '"a"',
    ],
  },
  { space: [' a', 'a ', 'a b', 'a\nb', 'tab\there', 'é', '中文', '\u0000u64:1', '\u007f'] },
  { 'key with space': 1, '0': 2, 'openebs.io/created-by': 'operator-diskpool', '': 3, 'a:b': 4 },
  { empty: { obj: {}, arr: [], nested: [[], {}, [[]]] }, nulls: [null, { x: null }] },
  [[1, [2, 3]], [{ a: 1, b: [{ c: 2 }] }], 'x'],
  { big: 18446744073709551615n, small: -9007199254740993n, safe: 9007199254740991 },
  { bool: [true, false], undef: undefined, deep: { a: { b: { c: { d: ['e'] } } } } },
  [],
  {},
  'plain',
  42,
  null,
];

describe('YAML for JSON data', () => {
  it.each(tricky.map((v) => [JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}` : x)), v]))(
    'reads back exactly: %s',
    (_label, value) => {
      expect(readBack(toYaml(value))).toEqual(asRead(value));
    },
  );

  // Every one of them: a text that does not parse fails the test instead of being skipped.
  it.each(fixtures.map((f) => [f.name, f.json]))(
    'reads back the stored value of the reference example %s, as the yaml package does',
    (_name, text) => {
      const value: unknown = JSON.parse(text);
      expect(readBack(toYaml([value]))).toEqual(parse(stringify([value])));
    },
  );

  it('writes big integers digit for digit', () => {
    expect(toYaml({ big: 18446744073709551615n, neg: -9007199254740993n })).toBe(
      'big: 18446744073709551615\nneg: -9007199254740993\n',
    );
  });

  it('writes block style: plain identifiers, quoted ambiguities', () => {
    expect(
      toYaml([{ uuid: 'a-1', status: { Created: 'Online' }, labels: null, tags: ['x', 'yes'], n: 3 }]),
    ).toBe(
      '- uuid: a-1\n  status:\n    Created: Online\n  labels: null\n  tags:\n  - x\n  - "yes"\n  "n": 3\n',
    );
  });
});
