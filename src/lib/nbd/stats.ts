import { Cmd } from './protocol.js';

/** Upper bounds (seconds) of the NBD latency buckets; one more bucket counts everything slower. */
export const NBD_LATENCY_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1,
] as const;

/**
 * I/O counters of one NBD export (a target). Plain numbers bumped on every request: the data path
 * pays a clock read and a few additions, never an allocation or a label lookup. The metrics
 * endpoint turns them into Prometheus series when scraped (src/lib/metrics/nbd.ts).
 */
export class NbdTargetStats {
  readBytes = 0;
  writeBytes = 0;
  reads = 0;
  writes = 0;
  /** Flush, trim, write-zeroes, cache. */
  others = 0;
  errors = 0;
  /** Requests per latency bucket (not cumulative); the last one is +Inf. */
  readonly buckets = new Float64Array(NBD_LATENCY_BUCKETS.length + 1);
  latencySum = 0;

  /** One finished request; `start` is its `performance.now()` at dispatch. */
  record(type: number, length: number, errno: number, start: number): void {
    const seconds = (performance.now() - start) / 1000;
    if (errno !== 0) this.errors++;
    else if (type === Cmd.READ) {
      this.reads++;
      this.readBytes += length;
    } else if (type === Cmd.WRITE) {
      this.writes++;
      this.writeBytes += length;
    } else this.others++;
    let i = 0;
    while (i < NBD_LATENCY_BUCKETS.length && seconds > NBD_LATENCY_BUCKETS[i]) i++;
    this.buckets[i]++;
    this.latencySum += seconds;
  }
}
