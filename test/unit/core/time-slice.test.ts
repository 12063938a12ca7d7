import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../src/lib/time-slice.js';

const busyFor = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin: a synchronous step of a long loop
  }
};

describe('TimeSlice', () => {
  it('gives the event loop back during a long loop, not only after it', async () => {
    const slice = new TimeSlice(5);
    let ranAt: number | null = null;
    setImmediate(() => {
      ranAt = done;
    });
    let done = 0;
    for (; done < 40; done++) {
      await slice.pause();
      busyFor(1);
    }
    expect(ranAt).not.toBeNull();
    expect(ranAt!).toBeLessThan(40);
  });

  it('costs nothing within the slice: no turn of the event loop is waited for', () => {
    const slice = new TimeSlice(60_000);
    for (let i = 0; i < 1000; i++) expect(slice.pause()).toBeUndefined();
  });
});
