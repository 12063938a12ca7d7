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

/** Parse `10GiB`, `512MiB`, `1G`, `4096` into bytes; null when it is not a size. */
export function parseBytes(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGTPE]?)(i?B?)\s*$/i.exec(text);
  if (!m) return null;
  const [, num, prefix] = m;
  const power = prefix ? 'KMGTPE'.indexOf(prefix.toUpperCase()) + 1 : 0;
  const value = Number(num) * 1024 ** power;
  return Number.isSafeInteger(Math.round(value)) ? Math.round(value) : null;
}
