/**
 * A pool's fill as one bar: `█` used, `▒` committed beyond used, `░` free, `?` where capacity is
 * unknown. Readable without colour (NO_COLOR) and on light or dark backgrounds.
 */
export function poolBar(
  used: number | undefined,
  committed: number,
  capacity: number | undefined,
  width: number,
): string {
  if (width <= 0) return '';
  if (!capacity) return '?'.repeat(width);
  const cells = (n: number) => Math.min(width, Math.round((n / capacity) * width));
  const u = cells(used ?? 0);
  const c = Math.max(u, cells(committed));
  const over = committed > capacity ? '!' : '';
  return `${'█'.repeat(u)}${'▒'.repeat(c - u)}${'░'.repeat(width - c)}`.slice(0, width - over.length) + over;
}
