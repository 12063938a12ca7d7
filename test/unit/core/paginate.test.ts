import { describe, expect, it } from 'vitest';
import { paginate } from '../../../src/daemons/core/rest/routes-volumes.js';

const q = (s: string) => new URLSearchParams(s);
const page = (items: Iterable<number>, query: string) => paginate(items, q(query));

describe('REST offset pagination', () => {
  const five = [0, 1, 2, 3, 4];

  it('gives a next_token exactly when entries remain after the page', () => {
    expect(page(five, 'max_entries=2')).toEqual({ entries: [0, 1], next_token: 2 });
    expect(page(five, 'max_entries=2&starting_token=2')).toEqual({ entries: [2, 3], next_token: 4 });
    expect(page(five, 'max_entries=2&starting_token=4')).toEqual({ entries: [4] });
    expect(page([0, 1, 2, 3], 'max_entries=2&starting_token=2')).toEqual({ entries: [2, 3] });
    expect(page(five, 'max_entries=5')).toEqual({ entries: five });
  });

  it('max_entries=0 is everything from the token on; a token past the end is an empty page', () => {
    expect(page(five, 'max_entries=0')).toEqual({ entries: five });
    expect(page(five, 'max_entries=0&starting_token=3')).toEqual({ entries: [3, 4] });
    expect(page(five, 'max_entries=2&starting_token=9')).toEqual({ entries: [] });
  });

  it("reads a map's values in insertion order without an array of them", () => {
    const m = new Map([5, 6, 7].map((v) => [String(v), v]));
    expect(page(m.values(), 'max_entries=2&starting_token=1')).toEqual({ entries: [6, 7] });
  });

  it('refuses a missing max_entries and negative or fractional numbers, naming the parameter', () => {
    expect(() => page(five, '')).toThrow(/max_entries' is required/);
    expect(() => page(five, 'max_entries=-1')).toThrow(/max_entries/);
    expect(() => page(five, 'max_entries=1&starting_token=1.5')).toThrow(/starting_token/);
  });
});
