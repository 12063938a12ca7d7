const UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

/** Bytes as kubectl-mayastor prints them: `0 B`, `512 B`, `10MiB`, `1.5GiB`. */
export function humanizeBytes(bytes: number | bigint | null | undefined): string {
  if (bytes === null || bytes === undefined) return '<none>';
  const n = Number(bytes);
  if (!Number.isFinite(n)) return '<none>';
  if (Math.abs(n) < 1024) return `${n} B`;
  let value = n;
  let unit = -1;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number(value.toFixed(2))}${UNITS[unit]}`;
}

const DECIMAL: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
const BINARY: Record<string, number> = {
  K: 2 ** 10,
  M: 2 ** 20,
  G: 2 ** 30,
  T: 2 ** 40,
  P: 2 ** 50,
  E: 2 ** 60,
};

/** The size forms `parseBytes` accepts, for error messages. */
export const SIZE_FORMS =
  'bytes (1073741824), or a Kubernetes quantity: 1Gi = 2^30, 1G = 10^9 (also Ki Mi Ti, k M T; GiB for Gi)';

/**
 * A size as a Kubernetes quantity: a number, optionally with a decimal suffix (`k` `M` `G` `T` `P`
 * `E`, powers of 1000) or a binary one (`Ki` `Mi` `Gi` `Ti` `Pi` `Ei`, powers of 1024; `GiB` etc.
 * also read as binary). No space, no `GB`: null for anything else, or a fraction of a byte.
 */
export function parseBytes(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)(?:([kMGTPE])|([KMGTPE])iB?)?$/.exec(text);
  if (!m) return null;
  const [, num, decimal, binary] = m;
  const value = Number(num) * (binary ? BINARY[binary] : DECIMAL[decimal ?? '']);
  return Number.isSafeInteger(value) ? value : null;
}

/** Ids for a message, the first `shown` of them and `…` for the rest: "a, b, c, d, e, …". */
export function someIds(ids: string[], shown = 5): string {
  return ids.slice(0, shown).join(', ') + (ids.length > shown ? ', …' : '');
}
