import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { listingPage } from '../../../src/daemons/io-engine/listing-page.js';

const items = (ids: string[]) => ids.map((uuid) => ({ uuid }));
const ids = (page: { uuid: string }[]) => page.map((i) => i.uuid);
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: number }).code;
  }
  return undefined;
};

describe('listingPage (paged io-engine listings)', () => {
  const ten = items(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']);

  it('reads every item once, in order, whatever the page size; the last page has no token', () => {
    for (const max of [1, 3, 4, 10, 11]) {
      const seen: string[] = [];
      let token = '';
      let pages = 0;
      do {
        const { page, nextToken } = listingPage(ten, token, max);
        expect(page.length).toBeLessThanOrEqual(max);
        seen.push(...ids(page));
        token = nextToken;
        pages++;
      } while (token);
      expect(seen).toEqual(ids(ten));
      expect(pages).toBe(Math.max(1, Math.ceil(ten.length / max)));
    }
    expect(listingPage(ten, '', 0)).toEqual({ page: ten, nextToken: '' });
    expect(listingPage([], '', 5)).toEqual({ page: [], nextToken: '' });
  });

  it('resumes after the last item given when items before it were removed or new ones were added', () => {
    const first = listingPage(ten, '', 4);
    expect(ids(first.page)).toEqual(['a', 'b', 'c', 'd']);
    // 'b' removed and 'k' created (at the end) before the next page is asked for.
    const changed = items(['a', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k']);
    const second = listingPage(changed, first.nextToken, 4);
    expect(ids(second.page)).toEqual(['e', 'f', 'g', 'h']);
    const third = listingPage(changed, second.nextToken, 4);
    expect(ids(third.page)).toEqual(['i', 'j', 'k']);
    expect(third.nextToken).toBe('');
  });

  it('answers ABORTED when the item the token names is gone, INVALID_ARGUMENT for a foreign token', () => {
    const first = listingPage(ten, '', 4);
    const withoutD = items(['a', 'b', 'c', 'e', 'f']);
    expect(codeOf(() => listingPage(withoutD, first.nextToken, 4))).toBe(grpc.status.ABORTED);
    for (const token of ['x', '4', ':d', '-1:d', '1234567890:d'])
      expect(codeOf(() => listingPage(ten, token, 4))).toBe(grpc.status.INVALID_ARGUMENT);
  });
});
