/**
 * Group commit for requests to one server: calls made while a batch is in flight wait and go
 * together in the next one, so concurrent callers share round trips (and, on an io-engine, one
 * metadata commit). Calls made in the same loop turn as an idle batcher's first call join it too.
 * Each caller gets its own item's result; a failed batch call fails every item in it.
 */
export class CallBatcher<I, O> {
  private queue: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private flushing = false;

  constructor(
    private readonly send: (items: I[]) => Promise<(O | Error)[]>,
    private readonly maxBatch = 64,
  ) {}

  call(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.send(batch.map((b) => b.item));
        if (results.length !== batch.length)
          throw new Error(`batch answer has ${results.length} results for ${batch.length} items`);
        batch.forEach((b, i) => {
          const r = results[i];
          if (r instanceof Error) b.reject(r);
          else b.resolve(r);
        });
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.flushing = false;
  }
}
