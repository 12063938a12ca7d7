import { describe, expect, it } from 'vitest';
import { jsonEqual, parseJson, stringifyJson } from '../../../src/lib/specs/json.js';

describe('lossless JSON for u64 values', () => {
  it.each([
    ['10075049441338057178', 10075049441338057178n],
    ['18446744073709551615', 18446744073709551615n],
    ['-9007199254740993', -9007199254740993n],
    ['9007199254740991', 9007199254740991],
    ['1234567890123456.5', 1234567890123456.5],
    ['12345678901234567e2', Number('12345678901234567e2')],
  ])('parses %s exactly', (text, expected) => {
    expect(parseJson(`{"a":[${text}]}`)).toEqual({ a: [expected] });
    expect(stringifyJson(parseJson(`{"a":[${text}]}`))).toBe(
      typeof expected === 'bigint' ? `{"a":[${text}]}` : JSON.stringify({ a: [expected] }),
    );
  });

  it('leaves digit runs inside strings (with escaped quotes) alone, and marks only whole integers', () => {
    const text =
      '{"a":"x\\"12345678901234567890","b":-12345678901234567890,"c":1.12345678901234567890,"d":[12345678901234567890]}';
    expect(parseJson(text)).toEqual({
      a: 'x"12345678901234567890',
      b: -12345678901234567890n,
      c: 1.1234567890123457,
      d: [12345678901234567890n],
    });
    expect(stringifyJson(parseJson(text))).toBe(text.replace('1.12345678901234567890', '1.1234567890123457'));
  });

  it.each([
    [
      '{"a":"host:12345678901234567890,x","b":12345678901234567890}',
      { a: 'host:12345678901234567890,x', b: 12345678901234567890n },
    ],
    ['{"a":"x\\":12345678901234567890]"}', { a: 'x":12345678901234567890]' }],
    [
      '{"a":"[ 12345678901234567890 ]","b":[ -12345678901234567890 , 1 ]}',
      { a: '[ 12345678901234567890 ]', b: [-12345678901234567890n, 1] },
    ],
    ['12345678901234567890', 12345678901234567890n],
  ])('tells a big integer from one that only looks like it inside a string: %s', (text, expected) => {
    expect(parseJson(text)).toEqual(expected);
  });

  // JSON.parse agrees on everything but a big integer, which it rounds: there the expected value has
  // the bigint in its place.
  const withBig = (text: string, key: string, big: bigint) => ({ ...JSON.parse(text), [key]: big });
  const samples: [string, unknown][] = [
    ['{"a":1,"b":[true,false,null],"c":{"d":"e\\"\\\\\\n\\u0001é"},"f":-0.5,"g":1e21}', undefined],
    ['  [ 1 , { "x" : [ ] , "y" : { } } , "s" ]  ', undefined],
    ['"just a string with 12345678901234567 digits"', undefined],
    [
      '{"__proto__":{"a":1},"k":99999999999999999}',
      withBig('{"__proto__":{"a":1}}', 'k', 99999999999999999n),
    ],
  ];
  it.each(samples)('agrees with JSON.parse on %s (apart from big integers)', (text, big) => {
    const ours = parseJson(text);
    const expected = big ?? JSON.parse(text);
    expect(jsonEqual(ours, expected)).toBe(true);
    expect(Object.getPrototypeOf(ours === null ? {} : ours)).not.toHaveProperty('a');
  });

  it.each(['{"a":1', '{"a":1}x', '[1,]', '{"a" 1}', '"unterminated', '{"a":01234567890123456}', 'nul'])(
    'rejects invalid JSON %s with a SyntaxError',
    (text) => {
      expect(() => parseJson(`${text} 12345678901234567`)).toThrow(SyntaxError);
      expect(() => parseJson(text)).toThrow(SyntaxError);
    },
  );

  it('writes compact JSON like serde_json, leaving out undefined properties', () => {
    expect(stringifyJson({ a: 1n, b: undefined, c: [undefined, 'x'], d: { e: null } })).toBe(
      '{"a":1,"c":[null,"x"],"d":{"e":null}}',
    );
  });

  it('jsonEqual ignores key order and compares numbers with bigints by value', () => {
    expect(jsonEqual({ a: 1, b: [1n] }, { b: [1], a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 2 })).toBe(false);
    expect(jsonEqual([1], { 0: 1 })).toBe(false);
  });
});
