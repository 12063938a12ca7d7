import { describe, expect, it } from 'vitest';
import { registry } from '../../../src/lib/metrics/registry.js';
import { recordSwitchover } from '../../../src/lib/metrics/switchover.js';

/** The switchover metrics ha-cluster records through one call (it is wired there, not here). */
describe('recordSwitchover', () => {
  it('counts each switchover by result and observes its duration', async () => {
    recordSwitchover('succeeded', 3.2);
    recordSwitchover('succeeded', 40);
    recordSwitchover('failed', 0.7);
    const text = await registry.metrics();
    expect(text).toContain('storctl_switchovers_total{result="succeeded"} 2');
    expect(text).toContain('storctl_switchovers_total{result="failed"} 1');
    expect(text).toContain('storctl_switchover_duration_seconds_count{result="succeeded"} 2');
    expect(text).toContain('storctl_switchover_duration_seconds_sum{result="succeeded"} 43.2');
    expect(text).toContain('storctl_switchover_duration_seconds_bucket{le="5",result="succeeded"} 1');
    expect(text).toContain('storctl_switchover_duration_seconds_bucket{le="1",result="failed"} 1');
  });
});
