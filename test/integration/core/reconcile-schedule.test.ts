import { afterEach, describe, expect, it } from 'vitest';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, TestCluster } from './cluster.js';

/** Reconcile passes core has completed so far. */
const passes = (c: TestCluster) => reconcilerRuns(metricsUrl(c.cores[0])!, 'pass');

/**
 * At 100k volumes a pass is about a second of CPU: core runs one before it is ready, and the next
 * one a period later or when something wakes it, not straight after the first while the first
 * REST requests arrive.
 */
describe('the reconcile loop after start', () => {
  let c: TestCluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });

  it('waits a period after the pass before ready, and a wake runs the next pass at once', async () => {
    c = await TestCluster.start({
      engines: 1,
      coreFlags: coreFlags({
        '--reconcile-period': '1h',
        '--reconcile-idle-period': '1h',
        '--cache-period': '1h',
        '--gc-period': '1h',
      }),
    });
    expect(await passes(c)).toBe(1);
    // Requests while the loop sleeps do not run a pass either.
    await c.rest.listVolumes();
    await c.rest.listNodes();
    expect(await passes(c)).toBe(1);
    // A drain wakes the loop: the node (no volumes on it) is drained without waiting the hour.
    await c.rest.drainNode('node-1', 'schedule-test');
    await waitFor(
      async () => ((await c!.rest.listNodes())[0].spec?.cordondrainstate?.drainedstate ? true : null),
      { what: 'node-1 drained' },
    );
    expect(await passes(c)).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
