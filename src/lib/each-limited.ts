/**
 * Run `fn` over `items` with at most `limit` calls in flight, in the items' order. For work whose
 * steps wait on I/O (an io-engine call, a store write): a thousand of them one after another take
 * a thousand round trips; a few at a time overlap them, and their store writes share commits. The
 * first rejection of `fn` stops what has not started yet and is thrown once the calls in flight
 * have settled.
 */
export async function eachLimited<T>(
  items: Iterable<T>,
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  const it = items[Symbol.iterator]();
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (!failure) {
      const next = it.next();
      if (next.done) return;
      try {
        await fn(next.value);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, worker));
  if (failure) throw failure.err;
}
