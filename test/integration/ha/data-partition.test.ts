import { describe, expect, it } from 'vitest';
import { scenarioResult } from '../../helpers/netns.js';

/**
 * The data network of the target's node is cut (its NBD address unreachable, no reset: packets are
 * dropped) while core still reaches its io-engine: the ha-node reports the path, and the switchover
 * must move the target to a node the application reaches. The new target cannot reach the cut
 * node's replica either, and comes up without it (Faulted, replaced by self-heal) rather than
 * falling back to the cut node, where the application would wait for the link.
 */
/** What data-partition.scenario.ts reports. */
interface PartitionResult {
  movedTo: string | null;
  ackedAtCut: number;
  ackedWhileCut: number;
  errors: string[];
  verify: { checked: number; bad: number[] };
  finalStatus: string;
  finalChildren: string[];
  events: string[];
}

describe('HA with the target node cut off the data network', () => {
  it('moves the target to a reachable node: the application goes on before the link is back, nothing lost', {
    timeout: 240_000,
  }, async () => {
    const r = await scenarioResult<PartitionResult>(
      new URL('./data-partition.scenario.ts', import.meta.url),
      220_000,
    );
    const context = JSON.stringify(r, null, 1);
    expect(r.movedTo, context).toMatch(/^node-[23]$/);
    expect(r.ackedWhileCut, context).toBeGreaterThanOrEqual(r.ackedAtCut + 50);
    expect(r.errors, context).toEqual([]);
    expect(r.verify.bad, context).toEqual([]);
    expect(r.finalStatus, context).toBe('Online');
    expect(r.finalChildren, context).toEqual(['Online', 'Online']);
    // The event says the new target came up without the cut node's replica, and why.
    expect(
      r.events.some((e: string) => e.includes('"Published"') && e.includes('could not be reached')),
      context,
    ).toBe(true);
  });
});
