/**
 * Calls for one key run one after another, each once the one before it settled (failed or not);
 * calls for different keys run in parallel.
 */
export class SerialByKey {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const settled = run.catch(() => {});
    this.tails.set(key, settled);
    void settled.then(() => {
      if (this.tails.get(key) === settled) this.tails.delete(key);
    });
    return run;
  }

  /** Once every call started so far has settled. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.tails.values()]);
  }
}
