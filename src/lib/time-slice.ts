import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * A loop over every volume of a large cluster runs for hundreds of milliseconds; run in one go it
 * holds the event loop — REST requests, watches, lease keep-alives — for all of that time. A loop
 * that awaits `pause()` each iteration gives the event loop back once per slice instead. Slices
 * are short: a client that sends its next request as soon as an answer arrives finds a fresh slice
 * running, and waits for all of it.
 */
export class TimeSlice {
  private start = performance.now();

  constructor(private readonly sliceMs = 2) {}

  /** Nothing to wait for within the slice; past it, resolves on the event loop's next turn. */
  pause(): Promise<void> | undefined {
    if (performance.now() - this.start < this.sliceMs) return undefined;
    return nextTurn().then(() => {
      this.start = performance.now();
    });
  }
}
