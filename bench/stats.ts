/** The q-quantile (the sorted sample at floor(q·n)), unrounded: a bar is checked on this. */
export const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

export const median = (xs: number[]): number => quantile(xs, 0.5);
