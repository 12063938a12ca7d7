import { client, registry } from './registry.js';

/*
 * Switchover metrics, defined here for ha-cluster to record (it calls `recordSwitchover` once per
 * switchover that ends); nothing else moves them.
 */

export type SwitchoverResult = 'succeeded' | 'failed';

export const switchovers = new client.Counter({
  name: 'storctl_switchovers_total',
  help: 'switchovers (a volume target moved after a failed path) that ended, by result (succeeded, failed)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const switchoverDuration = new client.Histogram({
  name: 'storctl_switchover_duration_seconds',
  help: 'time from a failed-path report to the end of its switchover, succeeded or failed',
  labelNames: ['result'] as const,
  buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
  registers: [registry],
});

/** Record one switchover that ended: its result and how long it took from the report. */
export function recordSwitchover(result: SwitchoverResult, seconds: number): void {
  switchovers.inc({ result });
  switchoverDuration.observe({ result }, seconds);
}
