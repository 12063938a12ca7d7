import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EngineApi } from '../../../src/daemons/core/engine-api.js';
import { Engines, RETIRED_CLIENT_GRACE_MS } from '../../../src/daemons/core/engines.js';
import type { Registry } from '../../../src/daemons/core/registry.js';

/** A client that only records whether it was closed. */
function client(): EngineApi & { closed: boolean } {
  const c = {
    closed: false,
    close() {
      c.closed = true;
    },
  };
  return c as unknown as EngineApi & { closed: boolean };
}

describe('Engines: the io-engine clients core holds', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a restarted io-engine gets a new client; the old one stays usable a while by the operations holding it', () => {
    vi.useFakeTimers();
    const live = { online: true, grpcEndpoint: '127.0.0.1:1', startedAt: 'first' };
    const registry = {
      nodeLive: new Map([['node-1', live]]),
      nodes: new Map([['node-1', {}]]),
      poolStates: new Map(),
    } as unknown as Registry;
    const made: ReturnType<typeof client>[] = [];
    const engines = new Engines(registry, () => {
      made.push(client());
      return made[made.length - 1];
    });
    const first = engines.get('node-1');
    expect(engines.get('node-1')).toBe(first);
    live.startedAt = 'second'; // the process restarted on the same endpoint
    const second = engines.get('node-1');
    expect(second).not.toBe(first);
    expect(made[0].closed).toBe(false);
    vi.advanceTimersByTime(RETIRED_CLIENT_GRACE_MS);
    expect(made[0].closed).toBe(true);
    expect(made[1].closed).toBe(false);
    engines.close();
    expect(made[1].closed).toBe(true);
  });
});
