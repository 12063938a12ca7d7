import { expect } from 'vitest';
import type { StorctlProcess } from './storctl.js';

/** The "metrics listening" URL a daemon printed at start. */
export function metricsUrl(proc: StorctlProcess): string | null {
  for (const line of proc.output.split('\n')) {
    if (!line.includes('"metrics listening"')) continue;
    try {
      return String(JSON.parse(line).url);
    } catch {}
  }
  return null;
}

/** Scrape: every sample as `name{labels}` → value (labels as printed, sorted by prom-client). */
export async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** How many times the core serving metrics at `url` has run `reconciler` (`pass`: whole passes). */
export async function reconcilerRuns(url: string, reconciler: string): Promise<number> {
  return sum(await scrape(url), 'storctl_reconcile_duration_seconds_count', { reconciler });
}

/** The sum of every sample of `name` whose labels include all of `labels`. */
export function sum(samples: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const [series, value] of samples) {
    const brace = series.indexOf('{');
    if ((brace < 0 ? series : series.slice(0, brace)) !== name) continue;
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) total += value;
  }
  return total;
}
