import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/lib/errors.js';
import { parseOutput } from '../../../src/lib/output/format.js';
import { type Listing, render } from '../../../src/lib/output/render.js';
import {
  evaluatePath,
  parseCustomColumns,
  parseJsonPathTemplate,
  parsePath,
  renderJsonPath,
  type Template,
} from '../../../src/lib/output/template.js';

const doc = {
  kind: 'List',
  items: [
    {
      spec: { uuid: 'a', size: 1, labels: { 'openebs.io/x': 'y', 'a}b': 'z' } },
      state: { status: 'Online' },
    },
    { spec: { uuid: 'b', size: 10075049441338057178n, labels: {} }, state: { status: 'Degraded' } },
  ],
};

const jsonpath = (t: string, root: unknown) =>
  renderJsonPath(parseJsonPathTemplate(t) as Extract<Template, { kind: 'jsonpath' }>, root);

describe('jsonpath', () => {
  it('selects fields, wildcards, indexes, slices and recursive fields like kubectl', () => {
    expect(jsonpath('{.items[*].spec.uuid}', doc)).toBe('a b');
    expect(jsonpath('{$.items[0].state.status}', doc)).toBe('Online');
    expect(jsonpath('{.items[-1].spec.uuid}', doc)).toBe('b');
    expect(jsonpath('{.items[0:1].spec.uuid}', doc)).toBe('a');
    expect(jsonpath('{..status}', doc)).toBe('Online Degraded');
    expect(jsonpath("{.items[0].spec.labels['openebs.io/x']}", doc)).toBe('y');
    expect(jsonpath('{.kind}', doc)).toBe('List');
    expect(jsonpath('{items[1].spec.uuid}', doc)).toBe('b'); // kubectl's leading bare field
  });

  it('prints literals, strings bare, u64 exact, objects as compact JSON, missing fields as nothing', () => {
    expect(jsonpath('{.items[*].spec.uuid}{"\\n"}', doc)).toBe('a b\n');
    expect(jsonpath('uuid={.items[0].spec.uuid} size={.items[1].spec.size}', doc)).toBe(
      'uuid=a size=10075049441338057178',
    );
    expect(jsonpath('{.items[0].state}', doc)).toBe('{"status":"Online"}');
    expect(jsonpath('[{.items[5].spec.uuid}{.nope}]', doc)).toBe('[]');
    // Braces inside quotes do not close the expression; @ stands for the root as $ does.
    expect(jsonpath('{"}"}{@.kind}{"{"}', doc)).toBe('}List{');
    expect(jsonpath("{.items[0].spec.labels['a}b']}", doc)).toBe('z');
  });

  it('refuses what it does not support with a usage error (exit 2) naming the problem', () => {
    const cases: [string, RegExp][] = [
      ['{range .items[*]}{.spec.uuid}{end}', /\{range\} is not supported/],
      ['{.items[?(@.spec.size>1)]}', /filters \[\?\(…\)\] are not supported/],
      ['{.items[*].spec.uuid', /unclosed '\{'/],
      ['.items}', /'\}' without '\{'/],
      ['{.items[abc]}', /'\[abc\]' is not an index/],
      ['{.items[0}', /unclosed '\['/],
      ['{}', /empty '\{\}'/],
      ['', /the template is empty/],
      ['{.spec..}', /'\.\.' must be followed by a field name/],
    ];
    for (const [t, re] of cases) {
      let err: unknown;
      try {
        parseJsonPathTemplate(t);
      } catch (e) {
        err = e;
      }
      expect(err, t).toBeInstanceOf(UsageError);
      expect((err as UsageError).exitCode, t).toBe(2);
      expect((err as Error).message, t).toMatch(re);
      expect((err as Error).message, t).toContain('e.g. -o jsonpath=');
    }
  });

  it('evaluates paths to every match, in document order', () => {
    expect(evaluatePath(parsePath('.items[*].state.status'), doc)).toEqual(['Online', 'Degraded']);
    expect(evaluatePath(parsePath('.items[*].nope'), doc)).toEqual([]);
    expect(evaluatePath(parsePath('.'), doc)).toEqual([doc]);
  });
});

describe('custom-columns', () => {
  it('parses HEADER:.path pairs, with or without braces, and refuses anything else', () => {
    const t = parseCustomColumns('ID:.spec.uuid,STATUS:{.state.status}');
    expect(t.kind === 'custom-columns' && t.columns.map((c) => c.header)).toEqual(['ID', 'STATUS']);
    for (const bad of ['', 'ID', 'ID:', ':.spec.uuid', 'ID:.spec.uuid,SIZE', 'ID:.items[?(@.x)]']) {
      expect(() => parseCustomColumns(bad), bad).toThrow(UsageError);
      expect(() => parseCustomColumns(bad), bad).toThrow(/custom-columns=HEADER:\.path/);
    }
  });
});

describe('-o values', () => {
  it('takes the plain formats and the two templates, and names every form for anything else', () => {
    expect(parseOutput('wide')).toEqual({ format: 'wide' });
    expect(parseOutput('jsonpath={.kind}').format).toBe('jsonpath');
    expect(parseOutput('custom-columns=A:.a').format).toBe('custom-columns');
    expect(() => parseOutput('xml')).toThrow(
      'Expected --output=xml to be one of: table, wide, json, yaml, jsonpath=TEMPLATE, custom-columns=SPEC',
    );
    expect(() => parseOutput('jsonpath')).toThrow(/the template is empty/);
    expect(() => parseOutput('custom-columns')).toThrow(/no columns given/);
  });
});

describe('listings through a template', () => {
  const listing: Listing<{ id: string; size: number; node: string | null }> = {
    rows: [
      { id: 'a', size: 1024, node: null },
      { id: 'bbbb', size: 0, node: 'n1' },
    ],
    columns: [{ header: 'ID', get: (r) => r.id }],
    object: (r) => ({ spec: { uuid: r.id, size: r.size, node: r.node } }),
  };
  it('jsonpath sees a List of the objects -o json prints, or the object itself for one', () => {
    const t = parseOutput('jsonpath={.items[*].spec.uuid}');
    expect(render(listing, t.format, t.template)).toBe('a bbbb');
    const one = parseOutput('jsonpath={.spec.size}');
    expect(render({ ...listing, single: true }, one.format, one.template)).toBe('1024');
  });
  it('custom-columns prints a borderless table of the objects, <none> for what is missing', () => {
    const t = parseOutput('custom-columns=UUID:.spec.uuid,NODE:.spec.node,SIZE:.spec.size');
    // kubectl's layout: no leading space, three spaces between columns.
    expect(render(listing, t.format, t.template).split('\n')).toEqual([
      'UUID   NODE     SIZE',
      'a      <none>   1024',
      'bbbb   n1       0',
    ]);
    expect(
      render(listing, t.format, t.template)
        .split('\n')
        .map((l) => l.trim().split(/\s+/)),
    ).toEqual([
      ['UUID', 'NODE', 'SIZE'],
      ['a', '<none>', '1024'],
      ['bbbb', 'n1', '0'],
    ]);
  });
});
