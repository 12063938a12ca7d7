import { describe, expect, it } from 'vitest';
import type { ClusterState } from '../../../src/lib/catalog/cluster.js';
import type { LiveState } from '../../../src/lib/catalog/live.js';
import { poolListing } from '../../../src/lib/catalog/views/pools.js';
import type { Pool } from '../../../src/lib/rest/types.js';
import type { PoolSpec } from '../../../src/lib/specs/index.js';

const MiB = 1 << 20;

describe("get pools' columns from core's live state", () => {
  const spec: PoolSpec = {
    node: 'node-1',
    id: 'small',
    disks: ['/var/lib/storctl/pools/small'],
    status: { Created: 'Online' },
    labels: null,
    operation: null,
  };
  const withUsed = (used: number): ClusterState => {
    const pool = { id: 'small', spec: {}, state: { id: 'small', node: 'node-1', capacity: 64 * MiB, used } };
    const live = { pools: new Map([['small', pool as unknown as Pool]]) } as unknown as LiveState;
    return {
      specs: { PoolSpec: new Map([['small', spec]]) },
      nexusInfo: new Map(),
      liveness: new Map(),
      errors: [],
      live,
    };
  };
  const cell = (state: ClusterState, header: string) => {
    const listing = poolListing(state);
    return listing.columns.find((c) => c.header === header)!.get(listing.rows[0]);
  };

  it('AVAILABLE is what is left of the capacity, and 0 for a pool a refused write left a piece beyond it', () => {
    expect(cell(withUsed(16 * MiB), 'AVAILABLE')).toBe('48MiB');
    // pool-space.ts: a refused thin write may leave one 64 KiB piece past the capacity.
    expect(cell(withUsed(64 * MiB + 64 * 1024), 'ALLOCATED')).toBe('64.06MiB');
    expect(cell(withUsed(64 * MiB + 64 * 1024), 'AVAILABLE')).toBe('0 B');
  });
});
