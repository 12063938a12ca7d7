import { describe, expect, it } from 'vitest';
import { eachLimited } from '../../../src/lib/each-limited.js';

/** A call that stays in flight until the test lets it finish. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('eachLimited', () => {
  it('keeps at most `limit` calls in flight and starts them in the items order', async () => {
    const gates = Array.from({ length: 10 }, gate);
    const started: number[] = [];
    let inFlight = 0;
    let most = 0;
    const run = eachLimited([...gates.keys()], 3, async (i) => {
      started.push(i);
      most = Math.max(most, ++inFlight);
      await gates[i].opened;
      inFlight--;
    });
    await Promise.resolve();
    expect(started).toEqual([0, 1, 2]);
    for (const g of gates) g.open();
    await run;
    expect(started).toEqual([...gates.keys()]);
    expect(most).toBe(3);
  });

  it('stops starting new calls after a failure and throws it once the calls in flight settle', async () => {
    const started: number[] = [];
    const settled: number[] = [];
    const slow = gate();
    const run = eachLimited([0, 1, 2, 3, 4, 5], 2, async (i) => {
      started.push(i);
      if (i === 0) await slow.opened;
      if (i === 1) throw new Error('item 1 failed');
      settled.push(i);
    });
    const outcome = run.then(
      () => 'resolved',
      (err: Error) => err.message,
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1]);
    slow.open();
    expect(await outcome).toBe('item 1 failed');
    expect(settled).toEqual([0]);
  });
});
