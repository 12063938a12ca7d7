import { describe, expect, it } from 'vitest';
import { eventKey, seeEventKey } from '../../../src/lib/catalog/events.js';
import { eventsPrefix } from '../../../src/lib/store/keys.js';

const space = { clusterId: 'c1', namespace: 'default' };

describe('event keys', () => {
  it('sort by time and never go back: not after a step of the clock back, nor before a newer key in the store', () => {
    const first = eventKey(space, 2_000_000);
    const afterStepBack = eventKey(space, 1_000_000);
    expect(afterStepBack > first).toBe(true);
    const newest = `${eventsPrefix(space)}000000003000000-000001`; // written by another process
    seeEventKey(newest);
    expect(eventKey(space, 1_500_000) > newest).toBe(true);
    expect(eventKey(space, 4_000_000)).toMatch(/\/000000004000000-\d{6}$/);
  });
});
