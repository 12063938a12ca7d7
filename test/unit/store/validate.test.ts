import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/lib/errors.js';
import { compareBytes, prefixEnd, validateTxn } from '../../../src/lib/store/validate.js';

describe('prefixEnd', () => {
  it('bounds exactly the keys under the prefix, in UTF-8 byte order', () => {
    expect(prefixEnd('')).toBe('');
    expect(prefixEnd('a/')).toBe('a0');
    const p = 'vol/é';
    const end = prefixEnd(p);
    for (const inside of [p, `${p}\0`, `${p}zz`, `${p}\u{10ffff}`, `${p}😀`]) {
      expect(compareBytes(inside, p)).toBeGreaterThanOrEqual(0);
      expect(compareBytes(inside, end)).toBeLessThan(0);
    }
    for (const outside of ['vol/f', 'vol/ê', 'vol/é'.slice(0, -1)]) {
      expect(compareBytes(outside, p) < 0 || compareBytes(outside, end) >= 0).toBe(true);
    }
  });
});

describe('validateTxn', () => {
  it('rejects malformed requests before anything runs', () => {
    const bad = [
      { compare: [], success: [{ type: 'put', key: '', value: 'x' }] },
      { compare: [{ key: 'k', target: 'mod', op: '==', value: 1.5 }], success: [] },
      { compare: [{ key: 'k', target: 'lease', op: '<', value: 'ab' }], success: [] },
      { compare: [{ key: 'k', target: 'lease', op: '==', value: 'XYZ' }], success: [] },
      { compare: [], success: [{ type: 'upsert', key: 'k' }] },
      { compare: [], success: [{ type: 'put', key: 'k', value: 3 }] },
    ];
    for (const request of bad) {
      expect(() => validateTxn(request as never)).toThrow(UsageError);
    }
    expect(validateTxn({ compare: [], success: [] }).failure).toEqual([]);
  });
});
