/**
 * The rows a list of `total` shows in `height` lines with `selected` in view: only these are
 * rendered, so 10k volumes cost as much as a screenful. The window moves as little as possible.
 */
export function visibleWindow(
  total: number,
  selected: number,
  height: number,
  previousStart = 0,
): { start: number; end: number } {
  const h = Math.max(1, height);
  if (total <= h) return { start: 0, end: total };
  let start = Math.min(Math.max(0, previousStart), total - h);
  if (selected < start) start = selected;
  else if (selected >= start + h) start = selected - h + 1;
  return { start, end: start + h };
}

/** Keep an index inside [0, total). */
export const clampIndex = (i: number, total: number) => Math.max(0, Math.min(i, total - 1));
