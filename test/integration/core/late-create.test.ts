import { describe, expect, it } from 'vitest';
import { scenarioResult } from '../../helpers/netns.js';

/**
 * A replica create whose answer is lost (node-2's gRPC cut off, no reset) times out in core, which
 * places the replica elsewhere or rolls the volume back; the io-engine carries the create out once
 * the link is back. That replica must go to the replica GC, not stay on node-2 as an orphan nobody
 * owns (`storctl orphans`, an `Orphaned` event, its space held). Once core's poll of the node has
 * gone unanswered, creates place their replicas elsewhere first instead of waiting on it again.
 */
/** What late-create.scenario.ts reports. */
interface LateCreateResult {
  placed: string[] | string;
  refused: string;
  avoided: string[];
  avoidedEvent: string | undefined;
  arrived: boolean;
  consistent: boolean;
  violations: string[];
  orphaned: string[];
  created: string[];
}

describe('replica creates that time out and happen later', () => {
  it('leave nothing behind: what they made is garbage collected', { timeout: 180_000 }, async () => {
    const r = await scenarioResult<LateCreateResult>(
      new URL('./late-create.scenario.ts', import.meta.url),
      170_000,
    );
    const context = JSON.stringify(r, null, 1);
    expect(r.placed, context).toEqual(['node-1', 'node-3']);
    expect(r.created.join('\n'), context).toMatch(/skipped pool-node-2: io-engine node-2: no answer within/);
    expect(r.refused, context).toMatch(/not created: replica creation failed/);
    // Created after core's poll of node-2 went unanswered: node-2 was not tried at all.
    expect(r.avoided, context).toEqual(['node-1', 'node-3']);
    expect(r.avoidedEvent, context).toMatch(/2 replica\(s\) of \d+ bytes on node-(1, node-3|3, node-1)"/);
    expect(r.arrived, context).toBe(true);
    expect(r.violations, context).toEqual([]);
    expect(r.consistent, context).toBe(true);
    expect(r.orphaned, context).toEqual([]);
  });
});
