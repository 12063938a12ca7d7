import { describe, expect, it } from 'vitest';
import { CallBatcher } from '../../../src/lib/io-engine/call-batcher.js';

/** A sender that records each batch and answers when released. */
function recordingSender() {
  const batches: number[][] = [];
  const pending: (() => void)[] = [];
  const send = (items: number[]) => {
    batches.push(items);
    return new Promise<(string | Error)[]>((resolve) => {
      pending.push(() => resolve(items.map((i) => (i < 0 ? new Error(`bad ${i}`) : `ok ${i}`))));
    });
  };
  const releaseNext = async () => {
    while (pending.length === 0) await new Promise((r) => setImmediate(r));
    pending.shift()!();
  };
  return { batches, send, releaseNext };
}

describe('CallBatcher', () => {
  it('sends calls of one loop turn together, and calls made meanwhile in the next batch', async () => {
    const s = recordingSender();
    const b = new CallBatcher(s.send, 64);
    const first = [1, 2, 3].map((i) => b.call(i));
    await s.releaseNext();
    await expect(Promise.all(first)).resolves.toEqual(['ok 1', 'ok 2', 'ok 3']);
    const second = [4, 5].map((i) => b.call(i));
    await s.releaseNext();
    await expect(Promise.all(second)).resolves.toEqual(['ok 4', 'ok 5']);
    expect(s.batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('queues calls made while a batch is in flight into one batch, capped at the maximum size', async () => {
    const s = recordingSender();
    const b = new CallBatcher(s.send, 2);
    const a = b.call(1);
    while (s.batches.length === 0) await new Promise((r) => setImmediate(r));
    const more = [2, 3, 4].map((i) => b.call(i));
    await s.releaseNext();
    await s.releaseNext();
    await s.releaseNext();
    await expect(Promise.all([a, ...more])).resolves.toEqual(['ok 1', 'ok 2', 'ok 3', 'ok 4']);
    expect(s.batches).toEqual([[1], [2, 3], [4]]);
  });

  it('fails only the item whose result is an error; a failed batch call fails each of its items', async () => {
    const s = recordingSender();
    const b = new CallBatcher(s.send, 64);
    const calls = [b.call(1), b.call(-2), b.call(3)].map((p) => p.catch((e: Error) => e.message));
    await s.releaseNext();
    expect(await Promise.all(calls)).toEqual(['ok 1', 'bad -2', 'ok 3']);

    const failing = new CallBatcher<number, string>(async () => {
      throw new Error('UNAVAILABLE: io-engine down');
    });
    const both = [failing.call(1), failing.call(2)].map((p) => p.catch((e: Error) => e.message));
    expect(await Promise.all(both)).toEqual(['UNAVAILABLE: io-engine down', 'UNAVAILABLE: io-engine down']);
  });

  it('rejects every item of a batch whose answer has the wrong number of results', async () => {
    const b = new CallBatcher<number, string>(async (items) => items.slice(1).map(String));
    const calls = [b.call(1), b.call(2)].map((p) => p.catch((e: Error) => e.message));
    expect(await Promise.all(calls)).toEqual([
      expect.stringMatching(/1 results for 2 items/),
      expect.stringMatching(/1 results for 2 items/),
    ]);
  });
});
